"""RetentionRepository: pruning finished executions past their retention.

Repositories never commit: the caller's unit of work (Database.transaction or autocommit) owns
the boundary.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from uuid import UUID

from app.db.database import Connection
from app.db.queries import load
from app.db.subscriptions import DELIVER_DELETED
from app.db.statements import fetchrow
from app.domain.states import JobState

Q = load("retention.sql", deliver_deleted=DELIVER_DELETED)
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
