"""Named SQL statements, compiled once for asyncpg, and the four ways to run one.

A statement is written with named parameters (`:id`, `:from_states`), as in app/db/sql/*.sql;
compiling turns each into asyncpg's positional `$n` (a name used twice is one parameter) and
remembers the order, so a caller passes keyword arguments. `::` casts, `:=`, string literals,
quoted identifiers and comments are left alone (the statements write casts as CAST(… AS …)
anyway). Every statement of Jobwire runs through fetch, fetchrow, fetchval or execute here, on a
connection from app.db.database.Database.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import Any

import asyncpg

# A literal, a quoted identifier, a comment, or a parameter outside them (not `::x`, not `:=`).
_TOKEN = re.compile(r"'(?:[^']|'')*'|\"(?:[^\"]|\"\")*\"|--[^\n]*|(?<![:\w]):([A-Za-z_]\w*)(?!\w)")


class Statement:
    __slots__ = ("name", "sql", "names")

    def __init__(self, text: str, name: str = "") -> None:
        order: list[str] = []

        def number(match: re.Match[str]) -> str:
            parameter = match[1]
            if parameter is None:  # a literal, identifier or comment: as it is
                return match[0]
            if parameter not in order:
                order.append(parameter)
            return f"${order.index(parameter) + 1}"

        self.name = name
        self.sql = _TOKEN.sub(number, text)
        self.names: tuple[str, ...] = tuple(order)

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
