"""The dashboard's reads (app/ui) that no API route makes: the overview's figures, an execution's
steps and its relatives in a workflow.

The overview's figures are the same for every open page of a node: each node reads them at most
once per `cache_seconds` per set of queues (a key limited to queues sees its own), however many
browsers refresh it, so a hundred open dashboards cost the database what one does. A pause or
resume through the dashboard forgets them at once (`forget`). The attempt outcomes of the last
15 minutes (the chart, the handlers' failure rates) are kept in a ledger per set of queues: a
minute that ended is read once, a refresh reads the last two minutes' events, not fifteen."""

from __future__ import annotations

import time
from collections.abc import Callable
from uuid import UUID

from app.db.dashboard import DashboardRepository
from app.db.database import Connection, Database
from app.db.nodes import NodeRepository
from app.db.queues import QueueRepository
from app.domain.dashboard import (FAILURES, OUTCOMES, HandlerActivity, OutcomeLedger, Overview, Relative,
                                  activity_by_handler)
from app.domain.steps import Step
from app.services.executions import ExecutionService

CACHE_SECONDS = 2.0
CHART_MINUTES = 15
RECENT_FAILURES = 20


class DashboardService:
    def __init__(self, db: Database, executions: ExecutionService, heartbeat_timeout: float, *,
                 repository: DashboardRepository | None = None, queues: QueueRepository | None = None,
                 nodes: NodeRepository | None = None, cache_seconds: float = CACHE_SECONDS,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.db = db
        self.executions = executions
        self.heartbeat_timeout = heartbeat_timeout
        self.repository = repository or DashboardRepository()
        self.queue_repository = queues or QueueRepository()
        self.nodes = nodes or NodeRepository()
        self.cache_seconds = cache_seconds
        self.clock = clock
        self._overviews: dict[frozenset[str] | None, tuple[Overview, float]] = {}
        # Per set of queues, its outcome ledger and until when it is fresh.
        self._ledgers: dict[frozenset[str] | None, tuple[OutcomeLedger, float]] = {}

    async def overview(self, queues: frozenset[str] | None = None) -> Overview:
        cached = self._overviews.get(queues)
        if cached is not None and cached[1] > self.clock():
            return cached[0]
        started = self.clock()
        async with self.db.transaction() as conn:
            depths = [d for d in await self.queue_repository.depth(conn) if queues is None or d.queue in queues]
            nodes = await self.nodes.live(conn, self.heartbeat_timeout)
            ledger = await self._outcomes(conn, queues)
            failures = await self.repository.recent_failures(conn, RECENT_FAILURES, [t.value for t in FAILURES],
                                                             queues)
        overview = Overview(depths, nodes, ledger.per_minute(), failures)
        if len(self._overviews) > 100:
            self._overviews.clear()
        self._overviews[queues] = (overview, started + self.cache_seconds)
        return overview

    async def handler_activity(self, queues: frozenset[str] | None = None) -> dict[str, HandlerActivity]:
        """Per handler: its calls in flight and its attempt outcomes of the last CHART_MINUTES
        minutes (the handlers page), the outcomes from the same ledger as the overview's chart. A
        key limited to queues counts those queues' only."""
        async with self.db.transaction() as conn:
            in_flight = await self.repository.in_flight_by_handler(conn, queues)
            ledger = await self._outcomes(conn, queues)
        return activity_by_handler(in_flight, ledger.by_handler())

    async def _outcomes(self, conn: Connection, queues: frozenset[str] | None) -> OutcomeLedger:
        """The outcome ledger of `queues`, brought up to date at most once per `cache_seconds`:
        a read takes the minutes since the one before the last read's (the first, the window)."""
        kept = self._ledgers.get(queues)
        if kept is not None and kept[1] > self.clock():
            return kept[0]
        ledger = kept[0] if kept is not None else OutcomeLedger(CHART_MINUTES)
        started, since = self.clock(), ledger.since()
        now_minute, counts = await self.repository.outcomes_per_minute(
            conn, CHART_MINUTES, since, [t.value for t in OUTCOMES], queues)
        ledger.record(now_minute, since, counts)
        if len(self._ledgers) > 100:
            self._ledgers.clear()
        self._ledgers[queues] = (ledger, started + self.cache_seconds)
        return ledger

    def forget(self) -> None:
        """The next overview is read afresh (after an action from this node); the ledgers' ended
        minutes are kept."""
        self._overviews.clear()
        self._ledgers = {q: (ledger, 0.0) for q, (ledger, _) in self._ledgers.items()}

    async def steps(self, execution_id: UUID, queues: frozenset[str] | None = None, limit: int = 200) -> list[Step]:
        await self.executions.get(execution_id, queues)  # NotFound unless visible
        async with self.db.transaction() as conn:
            return await self.repository.steps(conn, execution_id, limit)

    async def relatives(self, execution_id: UUID, queues: frozenset[str] | None = None,
                        limit: int = 100) -> tuple[list[Relative], list[Relative]]:
        """(parents, children) of the execution in its workflow: the jobs it depends on, and those
        that depend on it or that it spawned."""
        await self.executions.get(execution_id, queues)
        async with self.db.transaction() as conn:
            return (await self.repository.parents(conn, execution_id, limit),
                    await self.repository.children(conn, execution_id, limit))
