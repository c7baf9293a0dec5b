"""Named SQL statements from app/db/sql/*.sql, parsed and compiled once at import.

Column lists derive from tables.py: an execution is every column of job_executions but the
bookkeeping ones no reader is shown (the idempotency key and request fingerprint, a cron fire's
instant and node, updated_at); a schedule is every column of job_schedules. Statements name them
($COLUMNS, never RETURNING *: asyncpg's statement cache breaks on running nodes when a migration
adds a column).
"""

from __future__ import annotations

import re
from importlib import resources

from app.db.statements import Statement
from app.db.tables import job_executions, job_schedules

# Columns of job_executions kept out of the execution as shown (and as the domain holds it).
EXECUTION_BOOKKEEPING = frozenset({"idempotency_key", "request_hash", "fire_at", "fire_node", "updated_at",
                                   "claimed_by", "fair_tag", "on_dependency_failure", "pending_parents",
                                   "suspensions", "wake_at", "spawned_by"})
EXECUTION_COLUMNS = tuple(c.name for c in job_executions.columns if c.name not in EXECUTION_BOOKKEEPING)
SCHEDULE_COLUMNS = tuple(c.name for c in job_schedules.columns)

_EVENT_FIELDS = (
    "execution_id:id", "job_id", "job_type", "queue", "handler", "new_state:$state",
    "attempt:$attempt", "max_attempts", "error_type", "scheduled_at", "created_at",
    "started_at", "completed_at", "metadata",
)


def _columns(prefix: str = "") -> str:
    return ", ".join(f"{prefix}{c}" for c in EXECUTION_COLUMNS)


def _event(alias: str, state: str, attempt: str) -> str:
    """The curated transition event (no payload, result, raw error or parameters)."""
    parts = []
    for spec in _EVENT_FIELDS:
        key, _, source = spec.partition(":")
        source = source or key
        if source == "$state":
            value = state
        elif source == "$attempt":
            value = attempt
        else:
            value = f"{alias}.{source}"
        parts.append(f"'{key}', {value}")
    return "jsonb_build_object(" + ", ".join(parts) + ")"


_EVENT_CALL = re.compile(r"\$EVENT\((\w+),\s*([\w.]+),\s*([\w.]+)\)")
_HEADER = re.compile(r"^-- (name|fragment): (\w+)\s*$", re.MULTILINE)
_FRAGMENT_USE = re.compile(r"\$([a-z_]+)\b")


def _expand(sql: str) -> str:
    sql = _EVENT_CALL.sub(lambda m: _event(m[1], m[2], m[3]), sql)
    return (
        sql.replace("$S_COLUMNS", ", ".join(f"s.{c}" for c in SCHEDULE_COLUMNS))
        .replace("$E_COLUMNS", _columns("e."))
        .replace("$U_COLUMNS", _columns("u."))
        .replace("$COLUMNS", _columns())
    )


def parse(source: str, given: dict[str, str] | None = None) -> dict[str, str]:
    """Split a .sql file on `-- name: x` headers; returns name → SQL (comments kept).

    A `-- fragment: y` section is not a statement: `$y` in a statement is replaced by it, as it is
    by `given[y]` (a file written once for several tables names them so).
    """
    sections = _sections(source)
    fragments = {name: body.strip() for kind, name, body in sections if kind == "fragment"} | (given or {})
    return {name: _expand(_include(body, fragments)).strip() for kind, name, body in sections if kind == "name"}


def _sections(source: str) -> list[tuple[str, str, str]]:
    chunks = _HEADER.split(source)
    return list(zip(chunks[1::3], chunks[2::3], chunks[3::3], strict=True))


def _include(body: str, fragments: dict[str, str]) -> str:
    for _ in range(10):  # fragments may use fragments
        expanded = _FRAGMENT_USE.sub(lambda m: fragments.get(m[1], m[0]), body)
        if expanded == body:
            return expanded
        body = expanded
    raise ValueError("fragments nest too deep (a cycle?)")


def fragment(filename: str, name: str, **given: str) -> str:
    """A fragment of app/db/sql/<filename>, the fragments it uses expanded (theirs, and `given`),
    for another file's statements (`load(…, name=fragment(…))`)."""
    source = (resources.files("app.db") / "sql" / filename).read_text(encoding="utf-8")
    fragments = {found: body.strip() for kind, found, body in _sections(source) if kind == "fragment"} | given
    return _include(fragments[name], fragments)


def load(filename: str, **given: str) -> dict[str, Statement]:
    """The statements of app/db/sql/<filename>; `given`: fragments from the caller."""
    source = (resources.files("app.db") / "sql" / filename).read_text(encoding="utf-8")
    return {name: Statement(sql, name) for name, sql in parse(source, given).items()}
