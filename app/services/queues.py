"""Queue controls: pause (not claimed from; enqueue still works), resume, overview.

The overview counts the live states and the dead letters (ENQUEUED, due and scheduled,
PROCESSING, DEAD_LETTER) through the indexes on them, never the finished history: a count per
completion would add a contended write to every job, and the nodes' Prometheus counters give
the rates.

`queues`: those the caller's API key is limited to (None: every queue). The overview lists only
those; pausing or resuming another is Forbidden, naming it."""

from __future__ import annotations

from app.db.database import Database
from app.db.executions import ExecutionRepository
from app.db.queues import QueueRepository
from app.domain.access import require_queue
from app.domain.queues import QueueStatus
from app.domain.metrics import QueueDepth
from app.domain.states import JobState


class QueueService:
    def __init__(self, db: Database, queues: QueueRepository | None = None,
                 executions: ExecutionRepository | None = None) -> None:
        self.db = db
        self.queues = queues or QueueRepository()
        self.executions = executions or ExecutionRepository()

    async def list(self, queues: frozenset[str] | None = None) -> list[QueueStatus]:
        async with self.db.transaction() as conn:
            depths = await self.queues.depth(conn)
        return [_status(d) for d in depths if queues is None or d.queue in queues]

    async def set_paused(self, name: str, paused: bool, queues: frozenset[str] | None = None) -> QueueStatus:
        require_queue(queues, name)
        async with self.db.transaction() as conn:
            await self.queues.set_paused(conn, name, paused)
            if not paused:
                await self.executions.notify(conn, self.db.notify_channel, name)  # claim it at once
            [depth] = await self.queues.depth(conn, name)
        return _status(depth)


def _status(d: QueueDepth) -> QueueStatus:
    counts = {JobState.ENQUEUED.value: d.due + d.scheduled, JobState.PROCESSING.value: d.processing,
              JobState.DEAD_LETTER.value: d.dead_letter}
    return QueueStatus(name=d.queue, paused=d.paused, counts=counts,
                       oldest_claimable_age_seconds=d.oldest_due_age_seconds)
