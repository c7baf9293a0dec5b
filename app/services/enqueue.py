"""Enqueue: one job or a batch, atomically, with idempotency keys."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import timedelta
from functools import partial
from typing import TYPE_CHECKING

import orjson

from app.db.database import Database
from app.db.debounce import DebounceRepository
from app.db.executions import ExecutionRepository
from app.domain.access import require_queue
from app.domain.errors import DatabaseContention, DatabaseUnavailable, FieldError, PayloadTooLarge, ValidationFailed
from app.domain.executions import Execution, NewJob
from app.domain.metrics import NodeCounters
from app.services.grouping import Group
from app.services.retrying import retry_contention

if TYPE_CHECKING:  # imported by the composition root alone, with JOBWIRE_OTEL
    from app.delivery.telemetry import Telemetry


@dataclass(frozen=True, slots=True)
class EnqueueLimits:
    max_payload_bytes: int


@dataclass(frozen=True, slots=True)
class Enqueued:
    execution: Execution
    created: bool  # False: an idempotency key returned the first request's execution, or a debounce
    debounced: bool = False  # a debounced enqueue went to an execution that was there (`execution`)


def job_size(job: NewJob) -> int:
    return sum(len(orjson.dumps(part)) for part in (job.payload, job.parameters, job.metadata) if part is not None)


def handler_only(handler: str) -> NewJob:
    """A job the database can refuse for its handler alone: what is asked of an item the API
    refused (its other fields are not the ones it was sent with)."""
    return NewJob(handler=handler, job_id=None)  # type: ignore[arg-type]  # None → the execution id (in SQL)


# A field jobwire_enqueue names: `jobs[<position in its array>]` and the rest of the path.
_ITEM_FIELD = re.compile(r"^jobs\[(\d+)\](?:\.(.+))?$")


class _Undo(Exception):
    """Ends a transaction that asked jobwire_enqueue what it refuses: rolled back, nothing kept."""


class EnqueueService:
    def __init__(
        self,
        db: Database,
        limits: EnqueueLimits,
        executions: ExecutionRepository | None = None,
        counters: NodeCounters | None = None,
        telemetry: Telemetry | None = None,
    ) -> None:
        self.db = db
        self.limits = limits
        self.executions = executions or ExecutionRepository()
        self.counters = counters or NodeCounters()
        self.telemetry = telemetry  # a span per request (JOBWIRE_OTEL); None, none
        self.debounce = DebounceRepository()
        # Single-job enqueues that arrive together share a statement, a commit and a NOTIFY.
        self._singles: Group[NewJob, Enqueued] = Group(self._insert, self._insert_one)

    async def enqueue(self, jobs: Sequence[NewJob], *, field_prefix: str | None = None,
                      queues: frozenset[str] | None = None) -> list[Enqueued]:
        """Insert every job or none. `field_prefix` names items in errors (`jobs` → `jobs[3].handler`;
        None, for a single job → `handler`). `queues`: those the caller's key is limited to (None:
        any); a job in another is Forbidden, naming it, and nothing is inserted.

        One statement (jobwire_enqueue in the database, the path applications share) checks the
        handlers, applies defaults and stateful handlers, resolves idempotency keys (a key stored
        with the same request → that execution, created=False; with another → 422), and NOTIFYs
        the dispatchers on commit (the insert writes no event row: DESIGN §8). Concurrent single-job calls without an
        idempotency key share one (app/services/grouping.py): each is still atomic on its own,
        and answered as if alone.

        With telemetry, the request is a span, and the jobs store its context as their traceparent.
        """
        if self.telemetry is not None:
            with self.telemetry.enqueuing(jobs, batch=field_prefix is not None) as traced:
                done = await self._enqueue(traced.jobs, field_prefix, queues)
                traced.enqueued([d.execution for d in done])
                return done
        return await self._enqueue(jobs, field_prefix, queues)

    async def _enqueue(self, jobs: Sequence[NewJob], field_prefix: str | None,
                       queues: frozenset[str] | None) -> list[Enqueued]:
        for i, job in enumerate(jobs):
            require_queue(queues, job.queue, f"{field_prefix}[{i}].queue" if field_prefix else "queue")
            size = job_size(job)
            if size > self.limits.max_payload_bytes:
                raise PayloadTooLarge(field=f"{field_prefix}[{i}]" if field_prefix else "job",
                                      size=size, limit=self.limits.max_payload_bytes)
        if len(jobs) == 1 and field_prefix is None:
            if jobs[0].debounce is not None:
                return [await self._debounced(jobs[0])]
            if jobs[0].idempotency_key is None:
                return [await self._singles(jobs[0])]
            # Alone: a key may wait for another transaction that holds it (an application's
            # transactional enqueue), and a group would wait with it.
            return [await self._insert_one(jobs[0])]
        try:
            return await self._insert(jobs)
        except ValidationFailed as exc:
            if field_prefix is None:
                raise _renamed(exc, field_prefix) from None
            refused = _by_item(exc, range(len(jobs)))
            # The function stops at its first kind of refusal: ask it about the other items too, so
            # one answer names every item at fault (only now: the valid path stays one statement).
            named = {i for i, _ in refused}
            refused += await self.refusals([(i, job) for i, job in enumerate(jobs) if i not in named])
            raise ValidationFailed([_item_error(field_prefix, i, e) for i, e in _in_item_order(refused)]) from None

    async def refusals(self, jobs: Sequence[tuple[int, NewJob]],
                       queues: frozenset[str] | None = None) -> list[tuple[int | None, FieldError]]:
        """What jobwire_enqueue refuses of `jobs` (each with its position in the request), each
        error's field relative to its item (`handler`); nothing is stored. Asked only of a request
        refused anyway, so that its answer names every fault at once.

        The jobs are enqueued in a transaction rolled back (a NOTIFY goes out on commit only): the
        function's own checks, written once. It stops at its first kind of refusal (unknown
        handlers, then keys reused with another body), so the jobs it names are set aside and the
        rest asked again, until it refuses none. A job in a queue outside `queues`, or over the
        size limit, is asked about its handler only (not its idempotency key: the answer must not
        tell what another queue holds). Should the database fail to answer: what was found."""
        asked = [(i, job if self._within_limits(job, queues) else handler_only(job.handler)) for i, job in jobs]
        found: list[tuple[int | None, FieldError]] = []
        while asked:
            try:
                refusal = await retry_contention(partial(self._refusal, [job for _, job in asked]))
            except (DatabaseUnavailable, DatabaseContention):
                break
            if refusal is None:
                break
            named = _by_item(refusal, [i for i, _ in asked])
            found += named
            left = [(i, job) for i, job in asked if i not in {n for n, _ in named}]
            if len(left) == len(asked):  # it named no item of them: nothing more to learn
                break
            asked = left
        return found

    def _within_limits(self, job: NewJob, queues: frozenset[str] | None) -> bool:
        return (queues is None or job.queue in queues) and job_size(job) <= self.limits.max_payload_bytes

    async def _refusal(self, jobs: Sequence[NewJob]) -> ValidationFailed | None:
        try:
            async with self.db.transaction() as conn:
                await self.executions.enqueue(conn, jobs)
                raise _Undo
        except _Undo:
            return None
        except ValidationFailed as exc:
            return exc

    async def _insert(self, jobs: Sequence[NewJob]) -> list[Enqueued]:
        return await retry_contention(lambda: self._insert_once(jobs))

    async def _insert_once(self, jobs: Sequence[NewJob]) -> list[Enqueued]:
        # One statement, atomic on its own: no BEGIN and COMMIT round trips. A deadlock or a
        # serialization failure rolled it back whole: _insert runs it again.
        async with self.db.autocommit() as conn:
            done = await self.executions.enqueue(conn, jobs)
        self.counters.jobs_enqueued += sum(1 for _, created in done if created)
        return [Enqueued(execution, created) for execution, created in done]

    async def _debounced(self, job: NewJob) -> Enqueued:
        """A debounced enqueue (Debounce), in one transaction holding the (handler, key) row of
        job_debounce: two nodes debouncing one key at once take turns and leave one execution. An
        idempotency key stored before answers first, as for any enqueue."""
        try:
            return await retry_contention(lambda: self._debounce_once(job))
        except ValidationFailed as exc:
            raise _renamed(exc, None) from None

    async def _debounce_once(self, job: NewJob) -> Enqueued:
        d = job.debounce
        assert d is not None
        # What a new execution is enqueued as (trailing: due after the delay); also what a stored
        # idempotency key's request is compared with.
        plain = replace(job, debounce=None, delay_seconds=d.delay_seconds if d.mode == "trailing" else None)
        async with self.db.transaction() as conn:
            if job.idempotency_key is not None and await self.executions.has_idempotency_key(conn, job.idempotency_key):
                [(execution, created)] = await self.executions.enqueue(conn, [plain])
                return Enqueued(execution, created)
            run = await self.debounce.lock(conn, job.handler, d.key)
            if run is None:  # no such handler: the enqueue refuses it, naming the field
                await self.executions.enqueue(conn, [plain])
                raise AssertionError("jobwire_enqueue took a job of an unknown handler")
            cap = (run.first_at or run.now) + timedelta(seconds=d.cap_seconds)
            if d.mode == "trailing":
                if run.execution_id is not None and run.execution_state == "ENQUEUED":
                    pushed = await self.debounce.push(conn, run.execution_id, d.delay_seconds, cap, job.payload,
                                                      job.metadata)
                    if pushed is not None:
                        return Enqueued(pushed, created=False, debounced=True)
                [(execution, created)] = await self.executions.enqueue(conn, [plain])
                await self.debounce.start(conn, job.handler, d.key, execution.id, window=None)
            else:
                if run.execution_id is not None and run.until is not None and run.until > run.now:
                    taken = await self.executions.get(conn, run.execution_id)
                    if taken is not None:
                        await self.debounce.extend(conn, job.handler, d.key, d.delay_seconds, cap)
                        return Enqueued(taken, created=False, debounced=True)
                [(execution, created)] = await self.executions.enqueue(conn, [plain])
                await self.debounce.start(conn, job.handler, d.key, execution.id,
                                          window=min(d.delay_seconds, d.cap_seconds))
        if created:
            self.counters.jobs_enqueued += 1
        return Enqueued(execution, created)

    async def _insert_one(self, job: NewJob) -> Enqueued:
        try:
            [done] = await self._insert([job])
        except ValidationFailed as exc:
            raise _renamed(exc, None) from None
        return done


def _by_item(exc: ValidationFailed, positions: Sequence[int]) -> list[tuple[int | None, FieldError]]:
    """jobwire_enqueue's errors as (the request's position of the item, the field within it);
    `positions[k]` is the request's position of the function's item k. None: no item's field."""
    out: list[tuple[int | None, FieldError]] = []
    for e in exc.errors:
        item = _ITEM_FIELD.match(e.field)
        if item is None or int(item[1]) >= len(positions):
            out.append((None, e))
        else:
            out.append((positions[int(item[1])], FieldError(item[2] or "", e.message)))
    return out


def _in_item_order(errors: Sequence[tuple[int | None, FieldError]]) -> list[tuple[int | None, FieldError]]:
    return sorted(errors, key=lambda pair: -1 if pair[0] is None else pair[0])


def _item_error(prefix: str, position: int | None, e: FieldError) -> FieldError:
    if position is None:
        return e
    return FieldError(f"{prefix}[{position}]" + (f".{e.field}" if e.field else ""), e.message)


def _renamed(exc: ValidationFailed, prefix: str | None) -> ValidationFailed:
    return ValidationFailed([FieldError(_rename(e.field, prefix), e.message) for e in exc.errors])


def _rename(field: str, prefix: str | None) -> str:
    """jobwire_enqueue names items `jobs[i].field`: keep that for a batch, drop it for one job."""
    if prefix is None:
        return field.removeprefix("jobs[0].")
    return prefix + field.removeprefix("jobs") if field.startswith("jobs[") else field
