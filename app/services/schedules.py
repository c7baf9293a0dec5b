"""Schedule management: upsert (the caller's definition wins), show, list, delete, trigger, preview."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from zoneinfo import ZoneInfo

import orjson

from app.db.database import Database
from app.db.executions import ExecutionRepository
from app.db.handlers import HandlerRepository
from app.db.schedules import ScheduleRepository
from app.domain import cron
from app.domain.errors import Conflict, FieldError, NotFound, PayloadTooLarge, ValidationFailed
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

    async def put(self, job_id: str, spec: ScheduleSpec) -> tuple[Schedule, bool]:
        """Create (True) or replace (False) a schedule. An identical re-declaration changes nothing,
        not even updated_at. A changed one fires only instants after its new updated_at."""
        expr, tz = parse_spec(spec)
        size = sum(len(orjson.dumps(p)) for p in (spec.payload, spec.parameters, spec.metadata) if p is not None)
        if size > self.limits.max_payload_bytes:
            raise PayloadTooLarge(field="schedule", size=size, limit=self.limits.max_payload_bytes)
        async with self.db.transaction() as conn:
            # Held FOR KEY SHARE until commit: a concurrent handler delete waits, then sees the schedule.
            if spec.handler not in await self.handlers.lock_for_enqueue(conn, [spec.handler]):
                raise ValidationFailed([FieldError("handler", f"no handler named {spec.handler!r} is registered")])
            done = await self.schedules.upsert(conn, job_id, spec)
            if done is None:
                existing = await self.schedules.get(conn, job_id)
                assert existing is not None  # the upsert saw it, and this transaction holds it
                return existing, False
            schedule, created = done
            await self.schedules.forget_fires(conn, job_id)
            next_fire = cron.next_after(expr, tz, schedule.updated_at) if spec.enabled else None
            return await self.schedules.set_next_fire(conn, job_id, next_fire), created

    async def get(self, job_id: str) -> Schedule:
        async with self.db.transaction() as conn:
            schedule = await self.schedules.get(conn, job_id)
        if schedule is None:
            raise NotFound("schedule", job_id)
        return schedule

    async def list(self) -> list[Schedule]:
        async with self.db.transaction() as conn:
            return await self.schedules.list(conn)

    async def delete(self, job_id: str) -> None:
        """Remove the schedule (its executions stay); every node stops firing it within a tick."""
        async with self.db.transaction() as conn:
            if not await self.schedules.delete(conn, job_id):
                raise NotFound("schedule", job_id)

    async def trigger(self, job_id: str) -> Execution:
        """Fire now, once: a CRON execution with fire_at = now(), exempt from the overlap policy."""
        async with self.db.transaction() as conn:
            schedule = await self.schedules.get(conn, job_id)
            if schedule is None:
                raise NotFound("schedule", job_id)
            execution = await self.schedules.fire(conn, schedule, None, "")
            if execution is None:
                raise Conflict(f"schedule {job_id!r} fired at this very instant already")
            await self.schedules.mark_triggered(conn, job_id, execution.scheduled_at)
            await self.executions.notify(conn, self.db.notify_channel, execution.queue)
        return execution

    async def preview(self, job_id: str, count: int) -> list[datetime]:
        """The next `count` fire instants (UTC) from now, time zone and DST resolved."""
        async with self.db.transaction() as conn:
            schedule = await self.schedules.get(conn, job_id)
            if schedule is None:
                raise NotFound("schedule", job_id)
            now = await self.schedules.now(conn)
        expr, tz = parse_spec(schedule.spec)
        return cron.preview(expr, tz, max(now, schedule.updated_at), count)
