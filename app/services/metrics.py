"""/metrics: this node's counters and the queues' depth, read when scraped."""

from __future__ import annotations

from dataclasses import dataclass

from app.db.database import Database
from app.db.queues import QueueRepository
from app.domain.metrics import NodeCounters, QueueDepth


@dataclass(frozen=True, slots=True)
class MetricsSnapshot:
    node_id: str
    counters: NodeCounters
    in_flight: int
    queues: list[QueueDepth]


class MetricsService:
    def __init__(self, db: Database, node_id: str, counters: NodeCounters,
                 queues: QueueRepository | None = None) -> None:
        self.db = db
        self.node_id = node_id
        self.counters = counters
        self.queues = queues or QueueRepository()

    async def snapshot(self) -> MetricsSnapshot:
        async with self.db.transaction() as conn:
            depth = await self.queues.depth(conn)
        return MetricsSnapshot(self.node_id, self.counters, self.counters.in_flight(), depth)
