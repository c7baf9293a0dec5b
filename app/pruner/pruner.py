"""The pruner loop: a pruning run every `interval` seconds (the first one interval after start).

Every node runs one; racing pruners share the backlog (app/services/retention.py), so no node
needs to be chosen for it.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass

from app.domain.errors import DatabaseUnavailable
from app.domain.logfields import fields
from app.services.retention import PruneReport, PruneService

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class PrunerConfig:
    interval: float  # seconds between runs


class Pruner:
    def __init__(self, config: PrunerConfig, service: PruneService) -> None:
        self.config = config
        self.service = service
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.create_task(self._loop(), name="jobwire-pruner")

    async def run_once(self) -> PruneReport:
        """One run; logs how many it deleted (also when it failed or was stopped halfway)."""
        report = PruneReport()
        try:
            await self.service.run(report)
        finally:
            if report.total:
                by_state = {state.value.lower(): n for state, n in report.deleted.items()}
                log.info("pruned %d executions past their retention", report.total,
                         extra=fields(deleted=report.total, **by_state, batches=len(report.batches),
                                      duration_ms=round(report.seconds * 1000, 1)))
        return report

    async def _loop(self) -> None:
        while True:
            await asyncio.sleep(self.config.interval)
            try:
                await self.run_once()
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # log with context and carry on: the next run tries again
                log.warning("pruning failed: %s", exc, exc_info=not isinstance(exc, DatabaseUnavailable),
                            extra=fields(error=str(exc)))

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None
