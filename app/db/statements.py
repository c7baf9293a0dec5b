"""Named SQL statements, compiled once for asyncpg, and the four ways to run one.

A statement is written with named parameters (`:id`, `:from_states`), as in app/db/sql/*.sql;
compiling turns each into asyncpg's positional `$n` (a name used twice is one parameter) and
remembers the order, so a caller passes keyword arguments. What is not SQL code is left alone:
string literals ('…', E'…' with its backslash escapes, $tag$…$tag$ bodies), quoted identifiers,
`--` and nested `/* */` comments, `::` casts and `:=`. Inside square brackets a colon between two
bounds is an array slice (`a[lo:hi]`, `a[1:n]`); a colon that opens a bound (`a[:n]`, `a[lo :n]`)
could be either, so it is refused (write `a[:(n)]` for a slice or `a[(:n)]` for a parameter). Every
statement of Jobwire runs through fetch, fetchrow, fetchval or execute here, on a connection
from app.db.database.Database.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import Any

import asyncpg

from app.domain.jsontext import dumps

_NAME = re.compile(r"[A-Za-z_]\w*")
_DOLLAR_TAG = re.compile(r"\$(?:[A-Za-z_]\w*)?\$")  # $$ or $tag$ (not $1: a tag never starts with a digit)
_BOUND_END = re.compile(r"[\w)\]]")  # what ends a slice's lower bound


class StatementError(ValueError):
    """A statement that cannot be compiled (its text is quoted in the message)."""


def compile_named(text: str) -> tuple[str, tuple[str, ...]]:
    """`text` with each `:name` parameter as `$n`, and the names in their order."""
    order: list[str] = []
    out: list[str] = []
    brackets: list[int] = []  # for each open `[`, the parenthesis depth it was opened at
    parens = 0
    i, n = 0, len(text)

    def fail(why: str) -> StatementError:
        line = text.count("\n", 0, i) + 1
        return StatementError(f"{why} (line {line}: {text.splitlines()[line - 1].strip()!r})")

    while i < n:
        c = text[i]
        if c == "'" or (c in "eE" and text.startswith("'", i + 1) and not _is_word(text, i - 1)):
            j = _string_end(text, i + (c != "'"), backslashes=c != "'")
            if j < 0:
                raise fail("unterminated string literal")
        elif c == '"':
            j = text.find('"', i + 1)
            while j >= 0 and text.startswith('"', j + 1):  # "" inside a quoted identifier
                j = text.find('"', j + 2)
            if j < 0:
                raise fail("unterminated quoted identifier")
            j += 1
        elif text.startswith("--", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
        elif text.startswith("/*", i):
            j = _comment_end(text, i)
            if j < 0:
                raise fail("unterminated /* comment")
        elif c == "$" and (tag := _DOLLAR_TAG.match(text, i)) and not _is_word(text, i - 1):
            close = text.find(tag[0], tag.end())
            if close < 0:
                raise fail(f"unterminated {tag[0]} string")
            j = close + len(tag[0])
        elif c == ":" and (text.startswith("::", i) or text.startswith(":=", i)):
            j = i + 2
        elif c == ":" and (name := _NAME.match(text, i + 1)):
            j = name.end()
            previous = text[i - 1] if i else ""
            if previous and (previous.isalnum() or previous == "_"):
                out.append(text[i:j])  # `a[lo:hi]`, or a name glued to one: not a parameter
                i = j
                continue
            if brackets and brackets[-1] == parens:
                if _BOUND_END.match(previous):  # `a[(x):y]`: a slice
                    out.append(text[i:j])
                    i = j
                    continue
                raise fail(f"':{name[0]}' inside [...] could be a slice bound or a parameter: write "
                           f"a[:({name[0]})] for a slice or a[(:{name[0]})] for a parameter")
            if name[0] not in order:
                order.append(name[0])
            out.append(f"${order.index(name[0]) + 1}")
            i = j
            continue
        else:
            if c == "(":
                parens += 1
            elif c == ")":
                parens -= 1
            elif c == "[":
                brackets.append(parens)
            elif c == "]" and brackets:
                brackets.pop()
            j = i + 1
        out.append(text[i:j])
        i = j
    return "".join(out), tuple(order)


def _is_word(text: str, i: int) -> bool:
    return i >= 0 and (text[i].isalnum() or text[i] in "_$")


def _string_end(text: str, quote: int, *, backslashes: bool) -> int:
    """The index after the string literal whose opening quote is at `quote` ('' is a quote inside
    it; in an E'' string a backslash escapes the next character), or -1."""
    j = quote + 1
    while j < len(text):
        c = text[j]
        if backslashes and c == "\\":
            j += 2
            continue
        if c == "'":
            if text.startswith("'", j + 1):
                j += 2
                continue
            return j + 1
        j += 1
    return -1


def _comment_end(text: str, start: int) -> int:
    """The index after the /* comment opened at `start` (they nest in PostgreSQL), or -1."""
    depth, j = 0, start
    while j < len(text):
        if text.startswith("/*", j):
            depth, j = depth + 1, j + 2
        elif text.startswith("*/", j):
            depth, j = depth - 1, j + 2
            if depth == 0:
                return j
        else:
            j += 1
    return -1


class Statement:
    __slots__ = ("name", "sql", "names")

    def __init__(self, text: str, name: str = "") -> None:
        self.name = name
        self.sql, self.names = compile_named(text)

    def args(self, params: Mapping[str, Any]) -> list[Any]:
        missing = [n for n in self.names if n not in params]
        if missing:
            raise TypeError(f"statement {self.name or self.sql[:40]!r} needs {missing}")
        return [params[n] for n in self.names]

    def __repr__(self) -> str:
        return f"Statement({self.name or self.sql[:40]!r})"


@lru_cache(maxsize=256)
def _compiled(text: str) -> Statement:
    return Statement(text)


def _statement(sql: Statement | str) -> Statement:
    return sql if isinstance(sql, Statement) else _compiled(sql)


def json_param(value: Any) -> str | None:
    """A JSON parameter as the statements take it: its text, which they CAST to jsonb (the pool's
    codec passes text through as it is); None for SQL NULL."""
    return None if value is None else dumps(value).decode()


async def fetch(conn: asyncpg.Connection, sql: Statement | str, /, **params: Any) -> Sequence[asyncpg.Record]:
    s = _statement(sql)
    return await conn.fetch(s.sql, *s.args(params))


async def fetchrow(conn: asyncpg.Connection, sql: Statement | str, /, **params: Any) -> asyncpg.Record | None:
    s = _statement(sql)
    return await conn.fetchrow(s.sql, *s.args(params))


async def fetchval(conn: asyncpg.Connection, sql: Statement | str, /, **params: Any) -> Any:
    s = _statement(sql)
    return await conn.fetchval(s.sql, *s.args(params))


async def execute(conn: asyncpg.Connection, sql: Statement | str, /, **params: Any) -> int:
    """Run a statement for its effect; returns the rows it affected (0 for one that reports none)."""
    s = _statement(sql)
    status = await conn.execute(s.sql, *s.args(params))
    last = status.rsplit(" ", 1)[-1]
    return int(last) if last.isdigit() else 0
