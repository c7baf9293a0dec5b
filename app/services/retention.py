"""Retention: the pruner's use case (deleting finished executions once their retention has
passed) and the purge of one execution (DELETE /v1/executions/{id}).

Pruning is safe on every node at once: each batch is one statement that locks its rows with
SKIP LOCKED, so racing pruners share the backlog and never delete a row twice or wait for each
other, and each batch commits on its own (autocommit), holding its locks for that statement only.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from uuid import UUID

from app.db.database import Database
from app.db.executions import ExecutionRepository
from app.db.purge import PurgeRepository
from app.db.retention import FIRST_KEY, RetentionRepository
from app.domain.errors import InvalidTransition, NotFound
from app.domain.states import JobState

MAX_BATCH = 1000  # rows per statement, at most


@dataclass(frozen=True, slots=True)
class PruneConfig:
    retention_succeeded: float  # seconds after completed_at for SUCCEEDED; 0 keeps them forever
    retention_failed: float  # the same for CANCELLED, DEAD_LETTER and ABANDONED cron fires
    batch_size: int = MAX_BATCH
    # After a full batch, rest this many times as long as the batch took: a backlog (the first run
    # over a large table) then takes at most a quarter of one connection's time, and the work of
    # the dispatchers and callbacks on the same database goes first (bench/README.md, the
    # drain_pruning step, measures a drain beside a large prune with and without the rest).
    rest_ratio: float = 3.0

    def __post_init__(self) -> None:
        if not 1 <= self.batch_size <= MAX_BATCH:
            raise ValueError(f"batch_size must be 1..{MAX_BATCH}")
        if self.retention_succeeded < 0 or self.retention_failed < 0:
            raise ValueError("retention is seconds >= 0 (0 keeps forever)")
        if self.rest_ratio < 0:
            raise ValueError("rest_ratio must be >= 0")

    def classes(self) -> list[tuple[JobState, float]]:
        """(state, retention) of every class kept for a limited time."""
        failed = (JobState.CANCELLED, JobState.DEAD_LETTER, JobState.ABANDONED)
        classes = [(JobState.SUCCEEDED, self.retention_succeeded), *((s, self.retention_failed) for s in failed)]
        return [(state, retention) for state, retention in classes if retention > 0]


@dataclass(slots=True)
class PruneReport:
    deleted: dict[JobState, int] = field(default_factory=dict)  # per state
    batches: list[int] = field(default_factory=list)  # rows each statement deleted
    seconds: float = 0.0

    @property
    def total(self) -> int:
        return sum(self.deleted.values())


class PruneService:
    def __init__(self, db: Database, config: PruneConfig, retention: RetentionRepository | None = None) -> None:
        self.db = db
        self.config = config
        self.retention = retention or RetentionRepository()

    async def run(self, report: PruneReport | None = None) -> PruneReport:
        """Delete every execution whose retention has passed, class by class, in batches of at most
        batch_size rows (each one statement, committed on its own), until a batch comes back short,
        resting between full batches (rest_ratio). Rows another node's pruner (or any writer) held
        are left for the next run. `report` is filled in as the batches go, so a caller holds what
        a run deleted even when it fails or is cancelled halfway."""
        report = report if report is not None else PruneReport()
        started = time.monotonic()
        n = self.config.batch_size
        try:
            for state, retention in self.config.classes():
                after = FIRST_KEY
                while True:
                    began = time.monotonic()
                    async with self.db.autocommit() as conn:
                        batch = await self.retention.prune_batch(conn, state, retention, n, after)
                    report.batches.append(batch.deleted)
                    if batch.deleted:
                        report.deleted[state] = report.deleted.get(state, 0) + batch.deleted
                    if batch.deleted < n:
                        break
                    after = batch.last
                    await asyncio.sleep((time.monotonic() - began) * self.config.rest_ratio)
        finally:
            report.seconds = time.monotonic() - started
        return report


class PurgeService:
    def __init__(self, db: Database, purges: PurgeRepository | None = None,
                 executions: ExecutionRepository | None = None) -> None:
        self.db = db
        self.purges = purges or PurgeRepository()
        self.executions = executions or ExecutionRepository()

    async def delete(self, execution_id: UUID) -> None:
        """Delete an execution in any state but ENQUEUED and PROCESSING, with its logs, steps and
        events. NotFound when there is none; InvalidTransition while it is live."""
        async with self.db.transaction() as conn:
            if await self.purges.delete(conn, [execution_id]):
                return
            current = await self.executions.get(conn, execution_id)
        if current is None:
            raise NotFound("execution", execution_id)
        raise InvalidTransition("delete", current.state)
