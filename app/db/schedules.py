"""ScheduleRepository: job_schedules and the firing cursors (job_schedule_fires)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import orjson
from sqlalchemy.ext.asyncio import AsyncConnection

from app.db.queries import load
from app.db.rows import to_execution
from app.domain.executions import Execution
from app.domain.schedules import (
    ExecutionMode,
    FireSlot,
    MisfirePolicy,
    OverlapPolicy,
    Schedule,
    ScheduleSpec,
)

Q = load("schedules.sql")


def _json(value: Any) -> str | None:
    return None if value is None else orjson.dumps(value).decode()


def to_schedule(row: Any) -> Schedule:
    m = row._mapping
    return Schedule(
        job_id=m["job_id"],
        spec=ScheduleSpec(
            cron=m["cron_expression"],
            timezone=m["timezone"],
            handler=m["handler"],
            queue=m["queue"],
            payload=m["payload"],
            parameters=m["parameters"],
            metadata=m["metadata"],
            priority=m["priority"],
            enabled=m["enabled"],
            execution_mode=ExecutionMode(m["execution_mode"]),
            overlap_policy=OverlapPolicy(m["overlap_policy"]),
            misfire_policy=MisfirePolicy(m["misfire_policy"]),
            max_attempts=m["max_attempts"],
            tracked=m["tracked"],
        ),
        next_fire_at=m["next_fire_at"],
        last_fired_at=m["last_fired_at"],
        last_success_at=m["last_success_at"],
        last_failure_at=m["last_failure_at"],
        consecutive_failures=m["consecutive_failures"],
        created_at=m["created_at"],
        updated_at=m["updated_at"],
    )


class ScheduleRepository:
    async def upsert(self, conn: AsyncConnection, job_id: str, spec: ScheduleSpec) -> tuple[Schedule, bool] | None:
        """Insert or replace; (schedule, created). None: the stored definition is identical (unchanged)."""
        row = (await conn.execute(Q["schedule_upsert"], {
            "job_id": job_id, "cron": spec.cron, "timezone": spec.timezone, "handler": spec.handler,
            "queue": spec.queue, "payload": _json(spec.payload), "parameters": _json(spec.parameters),
            "metadata": _json(spec.metadata), "priority": spec.priority, "enabled": spec.enabled,
            "execution_mode": spec.execution_mode.value, "overlap_policy": spec.overlap_policy.value,
            "misfire_policy": spec.misfire_policy.value, "max_attempts": spec.max_attempts,
            "tracked": spec.tracked,
        })).first()
        return None if row is None else (to_schedule(row), bool(row._mapping["created"]))

    async def forget_fires(self, conn: AsyncConnection, job_id: str) -> None:
        await conn.execute(Q["schedule_forget_fires"], {"job_id": job_id})

    async def set_next_fire(self, conn: AsyncConnection, job_id: str, next_fire_at: datetime | None) -> Schedule:
        row = (await conn.execute(Q["schedule_set_next_fire"], {"job_id": job_id, "next_fire_at": next_fire_at})).one()
        return to_schedule(row)

    async def get(self, conn: AsyncConnection, job_id: str) -> Schedule | None:
        row = (await conn.execute(Q["schedule_get"], {"job_id": job_id})).first()
        return to_schedule(row) if row else None

    async def list(self, conn: AsyncConnection) -> list[Schedule]:
        return [to_schedule(r) for r in await conn.execute(Q["schedules_list"])]

    async def delete(self, conn: AsyncConnection, job_id: str) -> bool:
        return (await conn.execute(Q["schedule_delete"], {"job_id": job_id})).first() is not None

    async def due(self, conn: AsyncConnection, node: str) -> list[tuple[str, str]]:
        """(job_id, fire_node) of the slots this node should look at now."""
        return [(r[0], r[1]) for r in await conn.execute(Q["schedules_due"], {"node": node})]

    async def try_lock(self, conn: AsyncConnection, job_id: str, fire_node: str) -> bool:
        return bool((await conn.execute(Q["schedule_try_lock"], {"job_id": job_id, "fire_node": fire_node})).scalar())

    async def for_fire(self, conn: AsyncConnection, job_id: str, fire_node: str) -> FireSlot | None:
        row = (await conn.execute(Q["schedule_for_fire"], {"job_id": job_id, "fire_node": fire_node})).first()
        if row is None:
            return None
        m = row._mapping
        return FireSlot(to_schedule(row), fire_node, m["handled_until"], m["pending_fire_at"], m["now"])

    async def busy(self, conn: AsyncConnection, job_id: str, fire_node: str) -> bool:
        return bool((await conn.execute(Q["schedule_busy"], {"job_id": job_id, "fire_node": fire_node})).scalar())

    async def fire(self, conn: AsyncConnection, schedule: Schedule, fire_at: datetime | None,
                   fire_node: str) -> Execution | None:
        """The CRON execution of one instant (fire_at None: now()), or None if another node made it
        first or the definition changed since it was read."""
        row = (await conn.execute(Q["schedule_fire"], {
            "job_id": schedule.job_id, "updated_at": schedule.updated_at, "fire_at": fire_at,
            "fire_node": fire_node})).first()
        return to_execution(row) if row else None

    async def save_cursor(self, conn: AsyncConnection, schedule: Schedule, fire_node: str,
                          handled_until: datetime, next_fire_at: datetime | None,
                          pending_fire_at: datetime | None) -> None:
        await conn.execute(Q["schedule_save_cursor"], {
            "job_id": schedule.job_id, "updated_at": schedule.updated_at, "fire_node": fire_node,
            "handled_until": handled_until, "next_fire_at": next_fire_at, "pending_fire_at": pending_fire_at})

    async def mark_fired(self, conn: AsyncConnection, schedule: Schedule, fired_at: datetime | None,
                         next_fire_at: datetime | None) -> None:
        await conn.execute(Q["schedule_mark_fired"], {
            "job_id": schedule.job_id, "updated_at": schedule.updated_at, "fired_at": fired_at,
            "next_fire_at": next_fire_at})

    async def mark_triggered(self, conn: AsyncConnection, job_id: str, fired_at: datetime) -> None:
        await conn.execute(Q["schedule_mark_triggered"], {"job_id": job_id, "fired_at": fired_at})

    async def delete_succeeded(self, conn: AsyncConnection, job_id: str) -> None:
        await conn.execute(Q["schedule_delete_succeeded"], {"job_id": job_id})

    async def now(self, conn: AsyncConnection) -> datetime:
        return (await conn.execute(Q["db_now"])).scalar_one()
