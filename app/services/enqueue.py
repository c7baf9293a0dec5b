"""Enqueue: one job or a batch, atomically, with idempotency keys."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import orjson

from app.db.database import Database
from app.db.executions import ExecutionRepository
from app.db.handlers import HandlerRepository
from app.domain.errors import FieldError, PayloadTooLarge, ValidationFailed
from app.domain.executions import Execution, NewJob


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
        handlers: HandlerRepository | None = None,
    ) -> None:
        self.db = db
        self.limits = limits
        self.executions = executions or ExecutionRepository()
        self.handlers = handlers or HandlerRepository()

    async def enqueue(self, jobs: Sequence[NewJob], *, field_prefix: str | None = None) -> list[Enqueued]:
        """Insert every job or none. `field_prefix` names items in errors (`jobs` → `jobs[3].handler`)."""

        def where(i: int, field: str) -> str:
            return f"{field_prefix}[{i}].{field}" if field_prefix else field

        for i, job in enumerate(jobs):
            size = job_size(job)
            if size > self.limits.max_payload_bytes:
                raise PayloadTooLarge(field=f"{field_prefix}[{i}]" if field_prefix else "job",
                                      size=size, limit=self.limits.max_payload_bytes)

        keyed: dict[str, int] = {}
        for i, job in enumerate(jobs):
            if job.idempotency_key is None:
                continue
            first = keyed.setdefault(job.idempotency_key, i)
            if first != i and jobs[first].request_hash != job.request_hash:
                raise ValidationFailed([FieldError(
                    where(i, "idempotency_key"),
                    f"idempotency key {job.idempotency_key!r} is used by item {first} with a different body",
                )])

        async with self.db.transaction() as conn:
            stateful_by_handler = await self.handlers.lock_for_enqueue(conn, sorted({j.handler for j in jobs}))
            unknown = [FieldError(where(i, "handler"), f"no handler named {j.handler!r} is registered")
                       for i, j in enumerate(jobs) if j.handler not in stateful_by_handler]
            if unknown:
                raise ValidationFailed(unknown)
            # A handler registered stateful makes every job sent to it stateful.
            jobs = [replace(j, stateful=True) if stateful_by_handler[j.handler] and not j.stateful else j
                    for j in jobs]

            inserted = await self.executions.insert_many(conn, jobs)
            missing = sorted({jobs[i].idempotency_key for i, e in enumerate(inserted) if e is None})  # type: ignore[type-var]
            existing = await self.executions.by_idempotency_keys(conn, missing) if missing else {}

            results: list[Enqueued] = []
            for i, (job, execution) in enumerate(zip(jobs, inserted, strict=True)):
                if execution is not None:
                    results.append(Enqueued(execution, created=True))
                    continue
                assert job.idempotency_key is not None
                stored = existing.get(job.idempotency_key)
                if stored is None:
                    # Inserted earlier in this very batch under the same key (same body, checked above).
                    first = inserted[keyed[job.idempotency_key]]
                    assert first is not None
                    results.append(Enqueued(first, created=False))
                    continue
                stored_execution, stored_hash = stored
                if stored_hash != job.request_hash:
                    raise ValidationFailed([FieldError(
                        where(i, "idempotency_key"),
                        f"idempotency key {job.idempotency_key!r} was used with a different request body",
                    )])
                results.append(Enqueued(stored_execution, created=False))

            if any(r.created for r in results):
                # One NOTIFY per transaction, delivered on commit.
                await self.executions.notify(conn, self.db.notify_channel)
            return results
