"""/metrics: this node's counters and the queues' depth, read when scraped.

Every queue that has live rows, a pause flag or a schedule is listed, with a gauge for each live
state (0 included), and so is every queue this node listed before or dispatched from: a queue whose
work is all finished would otherwise drop out of the exposition (finding it in the finished history
would read the whole table), and its series would end instead of reading 0.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from app.db.database import Database
from app.db.handlers import HandlerGauges, HandlerRepository
from app.db.queues import QueueRepository
from app.domain.metrics import NodeCounters, QueueDepth, every_queue


@dataclass(frozen=True, slots=True)
class MetricsSnapshot:
    node_id: str
    counters: NodeCounters
    in_flight: int
    queues: list[QueueDepth]
    handlers: list[HandlerGauges] = field(default_factory=list)


class MetricsService:
    def __init__(self, db: Database, node_id: str, counters: NodeCounters,
                 queues: QueueRepository | None = None) -> None:
        self.db = db
        self.node_id = node_id
        self.counters = counters
        self.queues = queues or QueueRepository()
        self.handlers = HandlerRepository()
        self._listed: set[str] = set()  # queues shown by an earlier scrape

    async def snapshot(self) -> MetricsSnapshot:
        async with self.db.transaction() as conn:
            depth = await self.queues.depth(conn)
            scheduled = await self.queues.of_schedules(conn)
            handlers = await self.handlers.flow_gauges(conn)
        queues = every_queue(depth, [*scheduled, *self._listed, *self.counters.queues()])
        self._listed.update(q.queue for q in queues)
        return MetricsSnapshot(self.node_id, self.counters, self.counters.in_flight(), queues, handlers)
