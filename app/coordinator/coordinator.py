"""The coordinator's loops: a heartbeat every heartbeat_interval; a scan (dead nodes, deadlines)
every scan_interval, and between scans a deadline scan as soon as the earliest known deadline
passes; every wake_interval, the suspended executions whose time came are resumed.

Deadlines the loop knows of: the earliest one in the database (read after every scan) and those
the dispatcher reports as it claims (`expect_deadline`). So an accepted (202) attempt whose
handler goes quiet is abandoned within about DEADLINE_SLACK of its deadline, not at the next
scan; an idle node reads the earliest deadline once per scan and sleeps.
"""

from __future__ import annotations

import asyncio
import logging
import math
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from app.domain.errors import DatabaseUnavailable
from app.domain.logfields import fields
from app.services.coordination import CoordinationService, ScanReport

log = logging.getLogger(__name__)

# Past a deadline before the deadline scan runs: the abandon statement compares `deadline_at <
# now()` in the database, whose clock may be a little behind this process's.
DEADLINE_SLACK = 0.2
# At most one deadline scan this often (many attempts whose deadlines fall close together).
MIN_DEADLINE_SPACING = 0.5


@dataclass(frozen=True, slots=True)
class CoordinatorConfig:
    heartbeat_interval: float
    scan_interval: float
    wake_interval: float = 0.5  # how often suspended executions whose time came are resumed


class Coordinator:
    def __init__(self, config: CoordinatorConfig, service: CoordinationService) -> None:
        self.config = config
        self.service = service
        self._tasks: list[asyncio.Task[None]] = []
        self._next_deadline = math.inf  # loop time of the earliest deadline known
        self._alarm = asyncio.Event()  # set when a sooner deadline becomes known
        self._deferred_logged: set[str] = set()

    async def start(self) -> None:
        """Write the first heartbeat (before any claim), then run the loops."""
        await self.service.beat()
        self._tasks = [
            asyncio.create_task(self._every(self.config.heartbeat_interval, self.service.beat, "heartbeat"),
                                name="jobwire-heartbeat"),
            asyncio.create_task(self._scans(), name="jobwire-scan"),
            asyncio.create_task(self._every(self.config.wake_interval, self.service.wake_suspended,
                                            "waking suspended executions"), name="jobwire-wake"),
        ]

    def expect_deadline(self, seconds: float) -> None:
        """An attempt's deadline falls `seconds` from now: scan for it then, if sooner than planned."""
        when = asyncio.get_running_loop().time() + max(seconds, 0.0) + DEADLINE_SLACK
        if when < self._next_deadline:
            self._next_deadline = when
            self._alarm.set()

    async def run_once(self) -> ScanReport:
        report = await self.service.scan()
        node = self.service.config.node_id
        if report.recovered or report.forgotten:
            log.info("recovery: %d executions taken back from dead nodes %s", report.recovered,
                     ", ".join(report.forgotten) or "(none)",
                     extra=fields(node=node, dead_nodes=list(report.forgotten), recovered=report.recovered))
        if report.abandoned:
            log.info("deadline scan: %d past their deadline", report.abandoned,
                     extra=fields(node=node, abandoned=report.abandoned))
        fresh = set(report.deferred) - self._deferred_logged
        if fresh:
            log.info("nodes %s look dead, but this node was itself cut off from the database within the "
                     "last heartbeat timeout: they are judged once it has been connected that long",
                     ", ".join(sorted(fresh)), extra=fields(node=node, deferred_nodes=sorted(fresh)))
        self._deferred_logged = set(report.deferred)
        return report

    async def _scans(self) -> None:
        loop = asyncio.get_running_loop()
        next_scan = loop.time() + self.config.scan_interval
        last_deadline_scan = -math.inf
        while True:
            wake = min(next_scan, max(self._next_deadline, last_deadline_scan + MIN_DEADLINE_SPACING))
            self._alarm.clear()
            try:
                await asyncio.wait_for(self._alarm.wait(), timeout=max(wake - loop.time(), 0.0))
                continue  # a sooner deadline became known: sleep until it instead
            except TimeoutError:
                pass
            try:
                if loop.time() >= next_scan:
                    next_scan = loop.time() + self.config.scan_interval
                    await self.run_once()
                else:
                    last_deadline_scan = loop.time()
                    abandoned = await self.service.abandon_past_deadlines()
                    if abandoned:
                        log.info("deadline scan: %d past their deadline", abandoned,
                                 extra=fields(node=self.service.config.node_id, abandoned=abandoned))
                left = await self.service.seconds_to_next_deadline()
                self._next_deadline = math.inf if left is None else loop.time() + max(left, 0.0) + DEADLINE_SLACK
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # log with context and carry on: the next scan tries again
                self._next_deadline = math.inf
                log.warning("scan failed: %s", exc, exc_info=not isinstance(exc, DatabaseUnavailable),
                            extra=fields(node=self.service.config.node_id, error_type=type(exc).__name__))

    async def _every(self, interval: float, action: Callable[[], Awaitable[object]], what: str) -> None:
        while True:
            await asyncio.sleep(interval)
            try:
                await action()
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # log with context and carry on: the next tick tries again
                log.warning("%s failed: %s", what, exc, exc_info=not isinstance(exc, DatabaseUnavailable),
                            extra=fields(node=self.service.config.node_id, error_type=type(exc).__name__))

    async def stop(self) -> None:
        """Stop the loops, then delete this node's heartbeat row (kept if it still holds work)."""
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        try:
            if not await self.service.forget_self():
                log.warning("heartbeat row kept: executions are still held by this node",
                            extra=fields(node=self.service.config.node_id))
        except Exception as exc:
            log.warning("could not delete this node's heartbeat row: %s", exc,
                        extra=fields(node=self.service.config.node_id, error_type=type(exc).__name__))
