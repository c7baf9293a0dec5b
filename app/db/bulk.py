"""BulkRepository: selecting the rows of a bulk action (app/services/bulk.py changes them through
the single routes' guarded writes)."""

from __future__ import annotations

from collections.abc import Sequence
from importlib import resources
from uuid import UUID

from app.db.database import Connection
from app.db.queries import parse
from app.db.statements import fetch
from app.domain.executions import ListFilter
from app.domain.states import JobState

_Q = parse((resources.files("app.db") / "sql" / "bulk.sql").read_text(encoding="utf-8"))
_FILTERS = ("state", "queue", "handler", "job_id")


class BulkRepository:
    async def select(self, conn: Connection, states: Sequence[JobState], filters: ListFilter,
                     ids: Sequence[UUID] | None, n: int, *,
                     registered_handlers: bool = False) -> list[tuple[UUID, str]]:
        """(id, handler) of up to n executions in `states` matching every filter given (and, when
        `ids` is not None, among them), oldest first; `registered_handlers`: only those whose handler
        is registered (the rows a retry can change)."""
        where, params = [], {"states": [s.value for s in states], "n": n}
        for column in _FILTERS:
            value = getattr(filters, column)
            if value is not None:
                where.append(f"AND {column} = :{column}")
                params[column] = value
        if ids is not None:
            where.append("AND id = ANY(CAST(:ids AS uuid[]))")
            params["ids"] = list(ids)
        statement = "executions_select_for_bulk_retry" if registered_handlers else "executions_select_for_bulk"
        sql = _Q[statement].replace("/* filters */", " ".join(where))
        return [(r["id"], r["handler"]) for r in await fetch(conn, sql, **params)]
