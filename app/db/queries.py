"""Named SQL statements from app/db/sql/*.sql, parsed once at import."""

from __future__ import annotations

import re
from importlib import resources

from sqlalchemy import TextClause, text

EXECUTION_COLUMNS = (
    "id", "job_id", "job_type", "handler", "queue", "state", "attempt", "max_attempts",
    "priority", "stateful", "payload", "parameters", "metadata", "result", "progress",
    "scheduled_at", "created_at", "started_at", "completed_at", "deadline_at", "locked_by",
    "last_error", "error_type", "timeout_seconds", "max_duration_seconds",
)

SCHEDULE_COLUMNS = (
    "job_id", "cron_expression", "timezone", "handler", "queue", "payload", "parameters", "metadata",
    "priority", "enabled", "execution_mode", "overlap_policy", "misfire_policy", "max_attempts", "tracked",
    "last_fired_at", "next_fire_at", "last_success_at", "last_failure_at", "consecutive_failures",
    "created_at", "updated_at",
)

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


def parse(source: str) -> dict[str, str]:
    """Split a .sql file on `-- name: x` headers; returns name → SQL (comments kept).

    A `-- fragment: y` section is not a statement: `$y` in a statement is replaced by it.
    """
    chunks = _HEADER.split(source)
    sections = list(zip(chunks[1::3], chunks[2::3], chunks[3::3], strict=True))
    fragments = {name: body.strip() for kind, name, body in sections if kind == "fragment"}

    def include(body: str) -> str:
        for _ in range(10):  # fragments may use fragments
            expanded = _FRAGMENT_USE.sub(lambda m: fragments.get(m[1], m[0]), body)
            if expanded == body:
                return expanded
            body = expanded
        raise ValueError("fragments nest too deep (a cycle?)")

    return {name: _expand(include(body)).strip() for kind, name, body in sections if kind == "name"}


def load(filename: str) -> dict[str, TextClause]:
    source = (resources.files("app.db") / "sql" / filename).read_text(encoding="utf-8")
    return {name: text(sql) for name, sql in parse(source).items()}
