"""The dashboard's reads (app/ui) that no API route makes: the overview's figures, an execution's
steps and its relatives in a workflow.

The overview's figures and the handlers' activity (calls in flight, outcomes of the last 15
minutes) are the same for every open page of a node: each node reads them at most once per
`cache_seconds` per set of queues (a key limited to queues sees its own), however many
browsers refresh it, so a hundred open dashboards cost the database what one does. A pause or
resume through the dashboard forgets them at once (`forget`)."""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import UTC, datetime
from uuid import UUID

from app.db.dashboard import DashboardRepository
from app.db.database import Database
from app.db.nodes import NodeRepository
from app.db.queues import QueueRepository
from app.domain.dashboard import (FAILURES, OUTCOMES, HandlerActivity, Overview, Relative, activity_by_handler,
                                  per_minute)
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
        self._activities: dict[frozenset[str] | None, tuple[dict[str, HandlerActivity], float]] = {}

    async def overview(self, queues: frozenset[str] | None = None) -> Overview:
        cached = self._overviews.get(queues)
        if cached is not None and cached[1] > self.clock():
            return cached[0]
        started = self.clock()
        async with self.db.transaction() as conn:
            depths = [d for d in await self.queue_repository.depth(conn) if queues is None or d.queue in queues]
            nodes = await self.nodes.live(conn, self.heartbeat_timeout)
            now_minute, counts = await self.repository.outcomes_per_minute(
                conn, CHART_MINUTES, [t.value for t in OUTCOMES], queues)
            failures = await self.repository.recent_failures(conn, RECENT_FAILURES, [t.value for t in FAILURES],
                                                             queues)
        now_minute = now_minute or datetime.now(UTC).replace(second=0, microsecond=0)
        overview = Overview(depths, nodes, per_minute(now_minute, counts, CHART_MINUTES), failures)
        if len(self._overviews) > 100:
            self._overviews.clear()
        self._overviews[queues] = (overview, started + self.cache_seconds)
        return overview

    async def handler_activity(self, queues: frozenset[str] | None = None) -> dict[str, HandlerActivity]:
        """Per handler: its calls in flight and its attempt outcomes of the last CHART_MINUTES (the
        handlers page), read at most once per `cache_seconds` per set of queues, as the overview
        (the outcomes are the same events the chart reads). A key limited to queues counts those
        queues' only."""
        cached = self._activities.get(queues)
        if cached is not None and cached[1] > self.clock():
            return cached[0]
        started = self.clock()
        async with self.db.transaction() as conn:
            in_flight = await self.repository.in_flight_by_handler(conn, queues)
            outcomes = await self.repository.outcomes_by_handler(conn, CHART_MINUTES, [t.value for t in OUTCOMES],
                                                                 queues)
        activity = activity_by_handler(in_flight, outcomes)
        if len(self._activities) > 100:
            self._activities.clear()
        self._activities[queues] = (activity, started + self.cache_seconds)
        return activity

    def forget(self) -> None:
        """The next overview and handler activity are read afresh (after an action from this node)."""
        self._overviews.clear()
        self._activities.clear()

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
