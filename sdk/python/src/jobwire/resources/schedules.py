"""`client.schedules`: cron schedules, declared whole, previewed, fired on demand."""

from __future__ import annotations

import builtins
from datetime import datetime
from typing import Any, Unpack

from jobwire._protocol import Call, listed, nothing, path
from jobwire._resource import parse_time
from jobwire.models import Execution, Schedule
from jobwire.resources._driver import AsyncDriver, Driver, share_docs
from jobwire.types import ScheduleOptions


def put_schedule(job_id: str, cron: str, handler: str, options: ScheduleOptions) -> Call[Schedule]:
    body = {"cron": cron, "handler": handler, **{k: v for k, v in options.items() if v is not None}}
    return Call("putSchedule", "PUT", path("schedules", job_id), Schedule.from_json, body=body, name=job_id)


def get_schedule(job_id: str) -> Call[Schedule]:
    return Call("getSchedule", "GET", path("schedules", job_id), Schedule.from_json, name=job_id)


def list_schedules() -> Call[list[Schedule]]:
    return Call("listSchedules", "GET", path("schedules"), listed(Schedule.from_json))


def delete_schedule(job_id: str) -> Call[None]:
    return Call("deleteSchedule", "DELETE", path("schedules", job_id), nothing, name=job_id)


def trigger_schedule(job_id: str) -> Call[Execution]:
    return Call("triggerSchedule", "POST", path("schedules", job_id, "trigger"), Execution.from_json, name=job_id)


def _instant(value: Any) -> datetime:
    instant = parse_time(value)
    if instant is None:
        raise ValueError("a fire instant is null")
    return instant


def preview_schedule(job_id: str, count: int) -> Call[list[datetime]]:
    return Call("previewSchedule", "GET", path("schedules", job_id, "preview"), listed(_instant),
                params={"count": count}, name=job_id)


class Schedules:
    """`client.schedules`."""

    def __init__(self, driver: Driver) -> None:
        self._driver = driver

    def put(self, job_id: str, cron: str, handler: str, **options: Unpack[ScheduleOptions]) -> Schedule:
        """Declare a cron schedule, the whole definition (`timezone`, `payload`, `enabled`,
        `overlap_policy`, …; a field left out takes its default). `cron` has five fields, or six
        with a leading one for seconds."""
        return self._driver.run(put_schedule(job_id, cron, handler, options))

    def get(self, job_id: str) -> Schedule:
        """The schedule, with its next fire and its health."""
        return self._driver.run(get_schedule(job_id))

    def list(self) -> builtins.list[Schedule]:
        """Every schedule."""
        return self._driver.run(list_schedules())

    def delete(self, job_id: str) -> None:
        """Remove a schedule (its executions stay)."""
        return self._driver.run(delete_schedule(job_id))

    def trigger(self, job_id: str) -> Execution:
        """Fire the schedule now, once → the new CRON Execution. Not sent again after a lost reply."""
        return self._driver.run(trigger_schedule(job_id))

    def preview(self, job_id: str, count: int = 10) -> builtins.list[datetime]:
        """The next `count` fire instants (aware datetimes, UTC)."""
        return self._driver.run(preview_schedule(job_id, count))


class AsyncSchedules:
    """`client.schedules` of the asyncio client."""

    def __init__(self, driver: AsyncDriver) -> None:
        self._driver = driver

    async def put(self, job_id: str, cron: str, handler: str, **options: Unpack[ScheduleOptions]) -> Schedule:
        return await self._driver.run(put_schedule(job_id, cron, handler, options))

    async def get(self, job_id: str) -> Schedule:
        return await self._driver.run(get_schedule(job_id))

    async def list(self) -> builtins.list[Schedule]:
        return await self._driver.run(list_schedules())

    async def delete(self, job_id: str) -> None:
        return await self._driver.run(delete_schedule(job_id))

    async def trigger(self, job_id: str) -> Execution:
        return await self._driver.run(trigger_schedule(job_id))

    async def preview(self, job_id: str, count: int = 10) -> builtins.list[datetime]:
        return await self._driver.run(preview_schedule(job_id, count))


share_docs(AsyncSchedules, Schedules)
