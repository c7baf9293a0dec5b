"""Enqueue: one job or a batch, atomically, with idempotency keys."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import orjson

from app.db.database import Database
from app.db.executions import ExecutionRepository
from app.domain.access import require_queue
from app.domain.errors import FieldError, PayloadTooLarge, ValidationFailed
from app.domain.executions import Execution, NewJob
from app.domain.metrics import NodeCounters
from app.services.grouping import Group
from app.services.retrying import retry_contention


@dataclass(frozen=True, slots=True)
class EnqueueLimits:
    max_payload_bytes: int


@dataclass(frozen=True, slots=True)
class Enqueued:
    execution: Execution
    created: bool  # False: an idempotency key returned the first request's execution


def job_size(job: NewJob) -> int:
    return sum(len(orjson.dumps(part)) for part in (job.payload, job.parameters, job.metadata) if part is not None)


class EnqueueService:
    def __init__(
        self,
        db: Database,
        limits: EnqueueLimits,
        executions: ExecutionRepository | None = None,
        counters: NodeCounters | None = None,
    ) -> None:
        self.db = db
        self.limits = limits
        self.executions = executions or ExecutionRepository()
        self.counters = counters or NodeCounters()
        # Single-job enqueues that arrive together share a statement, a commit and a NOTIFY.
        self._singles: Group[NewJob, Enqueued] = Group(self._insert, self._insert_one)

    async def enqueue(self, jobs: Sequence[NewJob], *, field_prefix: str | None = None,
                      queues: frozenset[str] | None = None) -> list[Enqueued]:
        """Insert every job or none. `field_prefix` names items in errors (`jobs` → `jobs[3].handler`;
        None, for a single job → `handler`). `queues`: those the caller's key is limited to (None:
        any); a job in another is Forbidden, naming it, and nothing is inserted.

        One statement (jobwire_enqueue in the database, the path applications share) checks the
        handlers, applies defaults and stateful handlers, resolves idempotency keys (a key stored
        with the same request → that execution, created=False; with another → 422), writes the
        events and NOTIFYs the dispatchers on commit. Concurrent single-job calls without an
        idempotency key share one (app/services/grouping.py): each is still atomic on its own,
        and answered as if alone.
        """
        for i, job in enumerate(jobs):
            require_queue(queues, job.queue, f"{field_prefix}[{i}].queue" if field_prefix else "queue")
            size = job_size(job)
            if size > self.limits.max_payload_bytes:
                raise PayloadTooLarge(field=f"{field_prefix}[{i}]" if field_prefix else "job",
                                      size=size, limit=self.limits.max_payload_bytes)
        if len(jobs) == 1 and field_prefix is None:
            if jobs[0].idempotency_key is None:
                return [await self._singles(jobs[0])]
            # Alone: a key may wait for another transaction that holds it (an application's
            # transactional enqueue), and a group would wait with it.
            return [await self._insert_one(jobs[0])]
        try:
            return await self._insert(jobs)
        except ValidationFailed as exc:
            raise _renamed(exc, field_prefix) from None

    async def _insert(self, jobs: Sequence[NewJob]) -> list[Enqueued]:
        return await retry_contention(lambda: self._insert_once(jobs))

    async def _insert_once(self, jobs: Sequence[NewJob]) -> list[Enqueued]:
        # One statement, atomic on its own: no BEGIN and COMMIT round trips. A deadlock or a
        # serialization failure rolled it back whole: _insert runs it again.
        async with self.db.autocommit() as conn:
            done = await self.executions.enqueue(conn, jobs)
        self.counters.jobs_enqueued += sum(1 for _, created in done if created)
        return [Enqueued(execution, created) for execution, created in done]

    async def _insert_one(self, job: NewJob) -> Enqueued:
        try:
            [done] = await self._insert([job])
        except ValidationFailed as exc:
            raise _renamed(exc, None) from None
        return done


def _renamed(exc: ValidationFailed, prefix: str | None) -> ValidationFailed:
    return ValidationFailed([FieldError(_rename(e.field, prefix), e.message) for e in exc.errors])


def _rename(field: str, prefix: str | None) -> str:
    """jobwire_enqueue names items `jobs[i].field`: keep that for a batch, drop it for one job."""
    if prefix is None:
        return field.removeprefix("jobs[0].")
    return prefix + field.removeprefix("jobs") if field.startswith("jobs[") else field
