"""Firing cron schedules (DESIGN §6.3): one tick of one node.

Every node runs ticks; there is no leader and no node-local copy of the schedules: each tick reads
them from the database. Per schedule and slot (fire_node '' for SINGLE_INSTANCE, the node id for
EVERY_INSTANCE) one transaction takes a try-lock, re-reads the definition and the slot's cursor
(the instant up to which every fire was made or given up), asks the pure planner (app.domain.cron)
which instants are due, inserts their CRON executions (ON CONFLICT DO NOTHING on the unique index
uq_job_executions_cron_fire: one row per (job_id, fire_at, fire_node) whoever races), and moves the
cursor, all or nothing.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import datetime

from app.db.database import Database
from app.db.executions import ExecutionRepository
from app.db.schedules import ScheduleRepository
from app.domain import cron
from app.domain.executions import Execution
from app.domain.schedules import ExecutionMode, MisfirePolicy, OverlapPolicy

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class SchedulingConfig:
    node_id: str
    misfire_threshold: float
    max_fires_per_tick: int = 100  # per schedule; the rest waits for the next tick


@dataclass(slots=True)
class TickReport:
    fired: list[Execution] = field(default_factory=list)
    skipped: int = 0  # instants given up because the previous fire was unfinished (SKIP)
    held: int = 0  # instants held back by QUEUE_ONE
    missed: list[str] = field(default_factory=list)  # schedules that missed instants


class SchedulingService:
    def __init__(self, db: Database, config: SchedulingConfig, schedules: ScheduleRepository | None = None,
                 executions: ExecutionRepository | None = None) -> None:
        self.db = db
        self.config = config
        self.schedules = schedules or ScheduleRepository()
        self.executions = executions or ExecutionRepository()
        self.started_at: datetime | None = None  # database time of this node's first tick

    async def tick(self) -> TickReport:
        report = TickReport()
        async with self.db.transaction() as conn:
            if self.started_at is None:
                self.started_at = await self.schedules.now(conn)
            due = await self.schedules.due(conn, self.config.node_id)
        for job_id, fire_node in due:
            try:
                await self._fire_slot(job_id, fire_node, report)
            except cron.CronError as exc:  # a stored definition this version no longer accepts
                log.warning("schedule %s cannot fire: %s", job_id, exc)
        return report

    async def _fire_slot(self, job_id: str, fire_node: str, report: TickReport) -> None:
        async with self.db.transaction() as conn:
            if not await self.schedules.try_lock(conn, job_id, fire_node):
                return  # another node is firing this slot right now
            slot = await self.schedules.for_fire(conn, job_id, fire_node)
            if slot is None or not slot.schedule.spec.enabled:
                return
            schedule, spec = slot.schedule, slot.schedule.spec
            expr, tz = cron.parse(spec.cron), cron.zone(spec.timezone)
            # Only instants after the definition's updated_at fire; an EVERY_INSTANCE node catches up
            # nothing from before it started.
            floor = [schedule.updated_at, slot.handled_until]
            if spec.execution_mode is ExecutionMode.EVERY_INSTANCE:
                floor.append(self.started_at)
            plan = cron.plan(expr, tz, after=max(t for t in floor if t is not None), now=slot.now,
                             misfire_threshold=self.config.misfire_threshold,
                             fire_once_on_misfire=spec.misfire_policy is MisfirePolicy.FIRE_ONCE,
                             limit=self.config.max_fires_per_tick)
            if plan.missed:
                report.missed.append(job_id)
                log.warning("schedule %s missed fires (misfire policy %s)", job_id, spec.misfire_policy.value)
            held = None
            fired: list[Execution] = []
            for instant in sorted({*plan.fires, *([slot.pending_fire_at] if slot.pending_fire_at else [])}):
                if await self.schedules.busy(conn, job_id, fire_node):
                    if spec.overlap_policy is OverlapPolicy.QUEUE_ONE:
                        held = instant  # at most one waits: the latest
                        report.held += 1
                    else:
                        report.skipped += 1
                    continue
                execution = await self.schedules.fire(conn, schedule, instant, fire_node)
                if execution is not None:
                    fired.append(execution)
            await self.schedules.save_cursor(conn, schedule, fire_node, plan.handled_until, plan.next_fire_at, held)
            await self.schedules.mark_fired(conn, schedule, max((e.scheduled_at for e in fired), default=None),
                                            plan.next_fire_at)
            if fired:
                await self.executions.notify(conn, self.db.notify_channel, spec.queue)
            if not spec.tracked:
                await self.schedules.delete_succeeded(conn, job_id)
        report.fired.extend(fired)
