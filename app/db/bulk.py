"""BulkRepository: selecting the rows of a bulk action (app/services/bulk.py changes them through
the single routes' guarded writes)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from importlib import resources
from uuid import UUID

from app.db.database import Connection
from app.db.executions import job_id_condition
from app.db.queries import parse
from app.db.statements import fetch, fetchval
from app.domain.executions import ListFilter
from app.domain.states import JobState

_Q = parse((resources.files("app.db") / "sql" / "bulk.sql").read_text(encoding="utf-8"))
_FILTERS = ("state", "queue", "handler")


class BulkRepository:
    async def select(self, conn: Connection, states: Sequence[JobState], filters: ListFilter,
                     ids: Sequence[UUID] | None, n: int, *, as_of: datetime,
                     after: tuple[datetime, UUID] | None = None, queues: Sequence[str] | None = None,
                     registered_handlers: bool = False) -> list[tuple[UUID, str, datetime]]:
        """(id, handler, created_at) of up to n executions in `states` matching every filter given
        (and, when `ids` or `queues` is not None, among them), created by `as_of`, oldest first,
        after the (created_at, id) `after` in that order; `registered_handlers`: only those whose
        handler is registered (the rows a retry can change)."""
        where, params = [], {"states": [s.value for s in states], "n": n, "as_of": as_of}
        if after is not None:
            # The statement's order: created_at ascending, then id descending. The first term repeats
            # what the second implies, as an index condition: a call starts where the last stopped.
            where.append("AND created_at >= :after_created"
                         " AND (created_at > :after_created OR (created_at = :after_created AND id < :after_id))")
            params["after_created"], params["after_id"] = after
        if queues is not None:
            where.append("AND queue = ANY(CAST(:queues AS text[]))")
            params["queues"] = list(queues)
        for column in _FILTERS:
            value = getattr(filters, column)
            if value is not None:
                where.append(f"AND {column} = :{column}")
                params[column] = value
        if filters.job_id is not None:
            condition, more = job_id_condition(filters.job_id)
            where.append(f"AND {condition}")
            params.update(more)
        if ids is not None:
            where.append("AND id = ANY(CAST(:ids AS uuid[]))")
            params["ids"] = list(ids)
        statement = "executions_select_for_bulk_retry" if registered_handlers else "executions_select_for_bulk"
        sql = _Q[statement].replace("/* filters */", " ".join(where))
        return [(r["id"], r["handler"], r["created_at"]) for r in await fetch(conn, sql, **params)]

    async def as_of(self, conn: Connection) -> datetime:
        """The database's time: the instant a bulk action's first call takes its executions at."""
        return await fetchval(conn, _Q["bulk_as_of"])
