"""ScheduleRepository: job_schedules and the firing cursors (job_schedule_fires)."""

from __future__ import annotations

from datetime import datetime

from app.db.database import Connection
from app.db.queries import load
from app.db.subscriptions import DELIVER_DELETED
from app.db.rows import execution_from, schedule_from
from app.db.statements import execute, fetch, fetchrow, fetchval, json_param
from app.domain.executions import Execution
from app.domain.schedules import FireSlot, Schedule, ScheduleSpec

Q = load("schedules.sql", deliver_deleted=DELIVER_DELETED)


def _queue_list(queues: frozenset[str] | None) -> list[str] | None:
    return None if queues is None else sorted(queues)


class ScheduleRepository:
    async def upsert(self, conn: Connection, job_id: str, spec: ScheduleSpec,
                     queues: frozenset[str] | None = None) -> tuple[Schedule, bool] | None:
        """Insert or replace; (schedule, created). None: the stored definition is identical (unchanged),
        or it is in a queue not among `queues` (None: any), and left as it is."""
        row = await fetchrow(
            conn, Q["schedule_upsert"], job_id=job_id, cron=spec.cron, timezone=spec.timezone, handler=spec.handler,
            queue=spec.queue, payload=json_param(spec.payload), parameters=json_param(spec.parameters),
            metadata=json_param(spec.metadata), priority=spec.priority, enabled=spec.enabled,
            execution_mode=spec.execution_mode.value, overlap_policy=spec.overlap_policy.value,
            misfire_policy=spec.misfire_policy.value, max_attempts=spec.max_attempts, tracked=spec.tracked,
            queues=_queue_list(queues))
        return None if row is None else (schedule_from(row), bool(row["created"]))

    async def forget_fires(self, conn: Connection, job_id: str) -> None:
        await execute(conn, Q["schedule_forget_fires"], job_id=job_id)

    async def set_next_fire(self, conn: Connection, job_id: str, next_fire_at: datetime | None) -> Schedule:
        row = await fetchrow(conn, Q["schedule_set_next_fire"], job_id=job_id, next_fire_at=next_fire_at)
        assert row is not None
        return schedule_from(row)

    async def get(self, conn: Connection, job_id: str) -> Schedule | None:
        row = await fetchrow(conn, Q["schedule_get"], job_id=job_id)
        return schedule_from(row) if row else None

    async def list(self, conn: Connection, queues: frozenset[str] | None = None) -> list[Schedule]:
        """Every schedule, or those of `queues`, by job_id."""
        return [schedule_from(r) for r in await fetch(conn, Q["schedules_list"], queues=_queue_list(queues))]

    async def delete(self, conn: Connection, job_id: str, queues: frozenset[str] | None = None) -> bool:
        """False: no such schedule, or it is in a queue not among `queues` (None: any)."""
        return await fetchrow(conn, Q["schedule_delete"], job_id=job_id, queues=_queue_list(queues)) is not None

    async def due(self, conn: Connection, node: str) -> list[tuple[str, str]]:
        """(job_id, fire_node) of the slots this node should look at now."""
        return [(r[0], r[1]) for r in await fetch(conn, Q["schedules_due"], node=node)]

    async def try_lock(self, conn: Connection, job_id: str, fire_node: str) -> bool:
        return bool(await fetchval(conn, Q["schedule_try_lock"], job_id=job_id, fire_node=fire_node))

    async def for_fire(self, conn: Connection, job_id: str, fire_node: str) -> FireSlot | None:
        row = await fetchrow(conn, Q["schedule_for_fire"], job_id=job_id, fire_node=fire_node)
        if row is None:
            return None
        return FireSlot(schedule_from(row), fire_node, row["handled_until"], row["pending_fire_at"], row["now"])

    async def busy(self, conn: Connection, job_id: str, fire_node: str) -> bool:
        return bool(await fetchval(conn, Q["schedule_busy"], job_id=job_id, fire_node=fire_node))

    async def fire(self, conn: Connection, schedule: Schedule, fire_at: datetime | None,
                   fire_node: str) -> Execution | None:
        """The CRON execution of one instant (fire_at None: now()), or None if another node made it
        first or the definition changed since it was read."""
        row = await fetchrow(conn, Q["schedule_fire"], job_id=schedule.job_id, updated_at=schedule.updated_at,
                             fire_at=fire_at, fire_node=fire_node)
        return execution_from(row) if row else None

    async def save_cursor(self, conn: Connection, schedule: Schedule, fire_node: str,
                          handled_until: datetime, next_fire_at: datetime | None,
                          pending_fire_at: datetime | None) -> None:
        await execute(conn, Q["schedule_save_cursor"], job_id=schedule.job_id, updated_at=schedule.updated_at,
                      fire_node=fire_node, handled_until=handled_until, next_fire_at=next_fire_at,
                      pending_fire_at=pending_fire_at)

    async def mark_fired(self, conn: Connection, schedule: Schedule, fired_at: datetime | None,
                         next_fire_at: datetime | None) -> None:
        await execute(conn, Q["schedule_mark_fired"], job_id=schedule.job_id, updated_at=schedule.updated_at,
                      fired_at=fired_at, next_fire_at=next_fire_at)

    async def mark_triggered(self, conn: Connection, job_id: str, fired_at: datetime) -> None:
        await execute(conn, Q["schedule_mark_triggered"], job_id=job_id, fired_at=fired_at)

    async def delete_succeeded(self, conn: Connection, job_id: str) -> None:
        await execute(conn, Q["schedule_delete_succeeded"], job_id=job_id)

    async def now(self, conn: Connection) -> datetime:
        return await fetchval(conn, Q["db_now"])
