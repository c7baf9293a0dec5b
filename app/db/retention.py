"""RetentionRepository: pruning finished executions, purging one or many, and selecting the rows
of a bulk action.

Repositories never commit: the caller's unit of work (Database.transaction or autocommit) owns
the boundary.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from importlib import resources
from uuid import UUID

from app.db.database import Connection
from app.db.queries import load, parse
from app.db.statements import execute, fetch, fetchrow
from app.domain.executions import ListFilter
from app.domain.states import JobState

Q = load("retention.sql")
_BULK_SELECT = parse((resources.files("app.db") / "sql" / "retention.sql").read_text(encoding="utf-8"))[
    "executions_select_for_bulk"]
_BULK_FILTERS = ("state", "queue", "handler", "job_id")

# An execution may be deleted in any state but the live ones.
PURGE_FROM = tuple(s for s in JobState if s not in (JobState.ENQUEUED, JobState.PROCESSING))
# The states the pruner deletes from (ABANDONED: CRON fires only, which the statement checks).
PRUNABLE = (JobState.SUCCEEDED, JobState.CANCELLED, JobState.DEAD_LETTER, JobState.ABANDONED)

# The key before every row: where a pruning run starts.
FIRST_KEY = (datetime(1, 1, 1, tzinfo=UTC), UUID(int=(1 << 128) - 1))


@dataclass(frozen=True, slots=True)
class PruneBatch:
    deleted: int
    last: tuple[datetime, UUID]  # the key the next batch starts after


class RetentionRepository:
    async def prune_batch(self, conn: Connection, state: JobState, retention: float, n: int,
                          after: tuple[datetime, UUID] = FIRST_KEY) -> PruneBatch:
        """Delete up to n executions of `state` completed more than `retention` seconds ago (with
        their events, logs and steps), oldest first after the key `after`; one statement."""
        if state not in PRUNABLE:
            raise ValueError(f"{state} executions are never pruned")
        row = await fetchrow(conn, Q["executions_prune"], state=state.value, retention=float(retention), n=n,
                             after_created=after[0], after_id=after[1])
        if row is None:
            return PruneBatch(0, after)
        return PruneBatch(int(row["deleted"]), (row["created_at"], row["id"]))

    async def delete(self, conn: Connection, ids: Sequence[UUID]) -> list[UUID]:
        """Delete those of `ids` that are not ENQUEUED or PROCESSING, with their events; the ids deleted."""
        rows = await fetch(conn, Q["executions_delete"], ids=list(ids), from_states=list(PURGE_FROM))
        deleted = [r["id"] for r in rows]
        if deleted:
            await execute(conn, Q["executions_delete_events"], ids=deleted)
        return deleted

    async def select_for_bulk(self, conn: Connection, states: Sequence[JobState], filters: ListFilter,
                              ids: Sequence[UUID] | None, n: int) -> list[tuple[UUID, str]]:
        """(id, handler) of up to n executions in `states` matching every filter given (and, when
        `ids` is not None, among them), oldest first."""
        where, params = [], {"states": [s.value for s in states], "n": n}
        for column in _BULK_FILTERS:
            value = getattr(filters, column)
            if value is not None:
                where.append(f"AND {column} = :{column}")
                params[column] = value
        if ids is not None:
            where.append("AND id = ANY(CAST(:ids AS uuid[]))")
            params["ids"] = list(ids)
        sql = _BULK_SELECT.replace("/* filters */", " ".join(where))
        return [(r["id"], r["handler"]) for r in await fetch(conn, sql, **params)]
