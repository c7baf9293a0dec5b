"""The scheduler loop: a tick every `interval` seconds, aligned just after whole multiples of it
(so a `*/1 * * * * *` schedule is looked at right after each second, on every node)."""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass

from app.domain.errors import DatabaseUnavailable
from app.services.scheduling import SchedulingService, TickReport

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class SchedulerConfig:
    interval: float  # seconds between ticks
    offset: float = 0.01  # past each multiple of interval: a fire due at .000 is seen at once


class Scheduler:
    def __init__(self, config: SchedulerConfig, service: SchedulingService) -> None:
        self.config = config
        self.service = service
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.create_task(self._loop(), name="jobwire-scheduler")

    async def run_once(self) -> TickReport:
        report = await self.service.tick()
        if report.fired or report.skipped:
            log.debug("scheduler: %d fired, %d skipped (overlap), %d held (QUEUE_ONE)",
                      len(report.fired), report.skipped, report.held)
        return report

    async def _loop(self) -> None:
        while True:
            interval = self.config.interval
            await asyncio.sleep(interval - (time.time() % interval) + self.config.offset)
            try:
                await self.run_once()
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # log with context and carry on: the next tick tries again
                log.warning("scheduler tick failed: %s", exc, exc_info=not isinstance(exc, DatabaseUnavailable))

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None
