"""The named-parameter compiler (app/db/statements.py): `:name` becomes `$n` in SQL code, and only
there; what is not code (strings of every kind, quoted identifiers, comments) stays as written,
and what could be read two ways is refused with a message saying how to write it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from app.db.statements import Statement, StatementError, compile_named
from app.db.queries import parse


@pytest.mark.parametrize(("text", "compiled", "names"), [
    # parameters, in order of first use; a name used twice is one parameter
    ("SELECT :a, :b, :a", "SELECT $1, $2, $1", ("a", "b")),
    ("WHERE id = ANY(CAST(:ids AS uuid[]))", "WHERE id = ANY(CAST($1 AS uuid[]))", ("ids",)),
    ("SELECT :n::int, x::text", "SELECT $1::int, x::text", ("n",)),
    ("v := :value;", "v := $1;", ("value",)),
    ("SELECT :a_1+:b2", "SELECT $1+$2", ("a_1", "b2")),
    # string literals: standard ('' is a quote), escape strings (a backslash escapes), dollar-quoted
    ("SELECT 'it''s :x', :y", "SELECT 'it''s :x', $1", ("y",)),
    ("SELECT E'it\\'s :x', :y", "SELECT E'it\\'s :x', $1", ("y",)),
    ("SELECT e'a\\\\', :y", "SELECT e'a\\\\', $1", ("y",)),
    ("SELECT $$ :x ' $$, :y", "SELECT $$ :x ' $$, $1", ("y",)),
    ("AS $function$ BEGIN x := :no; END $function$; SELECT :y",
     "AS $function$ BEGIN x := :no; END $function$; SELECT $1", ("y",)),
    ("SELECT $1, :y", "SELECT $1, $1", ("y",)),  # a positional parameter is not a dollar quote
    # quoted identifiers and comments
    ('SELECT "a:b", "say ""x:y""", :z', 'SELECT "a:b", "say ""x:y""", $1', ("z",)),
    ("SELECT 1 -- :no\n, :y", "SELECT 1 -- :no\n, $1", ("y",)),
    ("SELECT /* :no /* nested :no */ still :no */ :y", "SELECT /* :no /* nested :no */ still :no */ $1", ("y",)),
    # array slices: a colon between bounds is a slice
    ("SELECT a[lo:hi], a[1:2], a[1:n], a[(x):y], a[i][j:k]", "SELECT a[lo:hi], a[1:2], a[1:n], a[(x):y], a[i][j:k]",
     ()),
    ("SELECT a[lo : hi], a[(:p)], a[:(q)] FROM t WHERE x = :r",
     "SELECT a[lo : hi], a[($1)], a[:(q)] FROM t WHERE x = $2", ("p", "r")),
    ("SELECT a[f(:p):3]", "SELECT a[f($1):3]", ("p",)),
])
def test_parameters_are_compiled_in_code_only(text: str, compiled: str, names: tuple[str, ...]) -> None:
    assert compile_named(text) == (compiled, names)


@pytest.mark.parametrize(("text", "message"), [
    ("SELECT a[:n] FROM t", "could be a slice bound or a parameter"),
    ("SELECT a[lo :n] FROM t", "could be a slice bound or a parameter"),
    ("SELECT 'open", "unterminated string literal"),
    ("SELECT E'open\\'", "unterminated string literal"),
    ('SELECT "open', "unterminated quoted identifier"),
    ("SELECT /* open /* */", "unterminated /* comment"),
    ("SELECT $body$ open", "unterminated $body$ string"),
])
def test_what_could_be_read_two_ways_or_never_ends_is_refused_saying_where(text: str, message: str) -> None:
    with pytest.raises(StatementError, match=re.escape(message)) as refused:
        compile_named(text)
    assert "line 1" in str(refused.value)


def test_a_statement_asks_for_every_parameter_it_names() -> None:
    statement = Statement("SELECT :a, :b", "two")
    assert statement.args({"b": 2, "a": 1, "unused": 3}) == [1, 2]
    with pytest.raises(TypeError, match=r"'two' needs \['b'\]"):
        statement.args({"a": 1})


def test_every_statement_of_the_service_compiles() -> None:
    files = sorted((Path(__file__).resolve().parents[2] / "app" / "db" / "sql").glob("*.sql"))
    assert files
    for path in files:
        for name, sql in parse(path.read_text(encoding="utf-8")).items():
            Statement(sql, name)  # raises StatementError for what it cannot read
