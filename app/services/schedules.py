"""Schedule management: upsert (the caller's definition wins), show, list, delete, trigger, preview.

Each use case takes `queues`: those the caller's API key is limited to (None: every queue). A
schedule of another queue is NotFound to it, exactly as one that does not exist, and a listing shows
only those queues' schedules; creating one in another queue, or moving one into or out of such a
queue, is Forbidden. (A job_id names one schedule across all queues, so a PUT of a name another
queue holds cannot pretend it is free: it is refused without naming that queue.)"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from zoneinfo import ZoneInfo

import orjson

from app.db.database import Connection, Database
from app.db.executions import ExecutionRepository
from app.db.handlers import HandlerRepository
from app.db.schedules import ScheduleRepository
from app.domain import cron
from app.domain.access import limited_to, may_use, require_queue
from app.domain.errors import Conflict, FieldError, Forbidden, NotFound, PayloadTooLarge, ValidationFailed
from app.domain.executions import Execution
from app.domain.schedules import Schedule, ScheduleSpec


@dataclass(frozen=True, slots=True)
class ScheduleLimits:
    max_payload_bytes: int


def parse_spec(spec: ScheduleSpec) -> tuple[cron.CronExpression, ZoneInfo]:
    """The expression and zone of a definition; ValidationFailed names `cron` / `timezone`."""
    errors: list[FieldError] = []
    expr = tz = None
    try:
        expr = cron.parse(spec.cron)
    except cron.CronError as exc:
        errors.append(FieldError("cron", str(exc)))
    try:
        tz = cron.zone(spec.timezone)
    except cron.CronError as exc:
        errors.append(FieldError("timezone", str(exc)))
    if errors or expr is None or tz is None:
        raise ValidationFailed(errors)
    return expr, tz


class ScheduleService:
    def __init__(self, db: Database, limits: ScheduleLimits, schedules: ScheduleRepository | None = None,
                 handlers: HandlerRepository | None = None, executions: ExecutionRepository | None = None) -> None:
        self.db = db
        self.limits = limits
        self.schedules = schedules or ScheduleRepository()
        self.handlers = handlers or HandlerRepository()
        self.executions = executions or ExecutionRepository()

    async def put(self, job_id: str, spec: ScheduleSpec,
                  queues: frozenset[str] | None = None) -> tuple[Schedule, bool]:
        """Create (True) or replace (False) a schedule. An identical re-declaration changes nothing,
        not even updated_at. A changed one fires only instants after its new updated_at."""
        require_queue(queues, spec.queue)
        expr, tz = parse_spec(spec)
        size = sum(len(orjson.dumps(p)) for p in (spec.payload, spec.parameters, spec.metadata) if p is not None)
        if size > self.limits.max_payload_bytes:
            raise PayloadTooLarge(field="schedule", size=size, limit=self.limits.max_payload_bytes)
        async with self.db.transaction() as conn:
            # Held FOR KEY SHARE until commit: a concurrent handler delete waits, then sees the schedule.
            if spec.handler not in await self.handlers.lock_for_enqueue(conn, [spec.handler]):
                raise ValidationFailed([FieldError("handler", f"no handler named {spec.handler!r} is registered")])
            done = await self.schedules.upsert(conn, job_id, spec, queues)
            if done is None:
                existing = await self.schedules.get(conn, job_id)
                assert existing is not None  # the upsert saw it, and this transaction holds it
                if queues is not None and existing.spec.queue not in queues:  # the upsert left it as it is
                    raise Forbidden(f"{limited_to(queues)}; schedule {job_id!r} is in a queue that is not one of "
                                    "them")
                return existing, False
            schedule, created = done
            await self.schedules.forget_fires(conn, job_id)
            next_fire = cron.next_after(expr, tz, schedule.updated_at) if spec.enabled else None
            return await self.schedules.set_next_fire(conn, job_id, next_fire), created

    async def get(self, job_id: str, queues: frozenset[str] | None = None) -> Schedule:
        async with self.db.transaction() as conn:
            return await self._visible(conn, job_id, queues)

    async def list(self, queues: frozenset[str] | None = None) -> list[Schedule]:
        async with self.db.transaction() as conn:
            return await self.schedules.list(conn, queues)

    async def list_with_fires(self, count: int, queues: frozenset[str] | None = None
                              ) -> list[tuple[Schedule, list[datetime]]]:
        """Every schedule (as `list`) with its next `count` fire instants as `preview` gives them (a
        disabled one: none), the database's clock read once for all."""
        async with self.db.transaction() as conn:
            schedules = await self.schedules.list(conn, queues)
            now = await self.schedules.now(conn)
        out = []
        for schedule in schedules:
            fires: list[datetime] = []
            if schedule.spec.enabled:
                try:
                    expr, tz = parse_spec(schedule.spec)
                    fires = cron.preview(expr, tz, max(now, schedule.updated_at), count)
                except ValidationFailed:
                    fires = []
            out.append((schedule, fires))
        return out

    async def delete(self, job_id: str, queues: frozenset[str] | None = None) -> None:
        """Remove the schedule (its executions stay); every node stops firing it within a tick."""
        async with self.db.transaction() as conn:
            if not await self.schedules.delete(conn, job_id, queues):
                raise NotFound("schedule", job_id)

    async def trigger(self, job_id: str, queues: frozenset[str] | None = None) -> Execution:
        """Fire now, once: a CRON execution with fire_at = now(), exempt from the overlap policy."""
        async with self.db.transaction() as conn:
            schedule = await self._visible(conn, job_id, queues)
            # Fires the definition just read (guarded on its updated_at), so never one moved since
            # into a queue the caller may not use.
            execution = await self.schedules.fire(conn, schedule, None, "")
            if execution is None:
                raise Conflict(f"schedule {job_id!r} fired at this very instant already")
            await self.schedules.mark_triggered(conn, job_id, execution.scheduled_at)
            await self.executions.notify(conn, self.db.notify_channel, execution.queue)
        return execution

    async def preview(self, job_id: str, count: int, queues: frozenset[str] | None = None) -> list[datetime]:
        """The next `count` fire instants (UTC) from now, time zone and DST resolved."""
        async with self.db.transaction() as conn:
            schedule = await self._visible(conn, job_id, queues)
            now = await self.schedules.now(conn)
        expr, tz = parse_spec(schedule.spec)
        return cron.preview(expr, tz, max(now, schedule.updated_at), count)

    async def _visible(self, conn: Connection, job_id: str, queues: frozenset[str] | None) -> Schedule:
        """The schedule, NotFound if there is none or it is in a queue not among `queues`."""
        schedule = await self.schedules.get(conn, job_id)
        if schedule is None or not may_use(queues, schedule.spec.queue):
            raise NotFound("schedule", job_id)
        return schedule
