"""The coordinator's two loops: a heartbeat every heartbeat_interval, a scan every scan_interval."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from app.domain.errors import DatabaseUnavailable
from app.services.coordination import CoordinationService, ScanReport

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class CoordinatorConfig:
    heartbeat_interval: float
    scan_interval: float


class Coordinator:
    def __init__(self, config: CoordinatorConfig, service: CoordinationService) -> None:
        self.config = config
        self.service = service
        self._tasks: list[asyncio.Task[None]] = []

    async def start(self) -> None:
        """Write the first heartbeat (before any claim), then run the loops."""
        await self.service.beat()
        self._tasks = [
            asyncio.create_task(self._every(self.config.heartbeat_interval, self.service.beat, "heartbeat"),
                                name="jobwire-heartbeat"),
            asyncio.create_task(self._every(self.config.scan_interval, self.run_once, "scan"),
                                name="jobwire-scan"),
        ]

    async def run_once(self) -> ScanReport:
        report = await self.service.scan()
        if report.recovered or report.abandoned:
            log.info("scan: %d recovered from dead nodes %s, %d past their deadline",
                     report.recovered, report.forgotten, report.abandoned)
        return report

    async def _every(self, interval: float, action: Callable[[], Awaitable[object]], what: str) -> None:
        while True:
            await asyncio.sleep(interval)
            try:
                await action()
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # log with context and carry on: the next tick tries again
                log.warning("%s failed: %s", what, exc, exc_info=not isinstance(exc, DatabaseUnavailable))

    async def stop(self) -> None:
        """Stop the loops, then delete this node's heartbeat row (kept if it still holds work)."""
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        try:
            if not await self.service.forget_self():
                log.warning("heartbeat row kept: executions are still held by this node")
        except Exception as exc:
            log.warning("could not delete this node's heartbeat row: %s", exc)

