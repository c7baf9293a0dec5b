"""Handler callbacks: token checks, the completion of an accepted (202) attempt, progress and
heartbeats, logs, and run-step-once steps."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from uuid import UUID

from app.db.database import Database
from app.db.executions import ExecutionRepository
from app.db.logs import LogRepository
from app.db.steps import StepRepository
from app.db.workflows import WorkflowRepository
from app.domain.errors import Forbidden, NotFound, StaleAttempt, Unauthenticated
from app.domain.dispatch import Outcome, OutcomeKind
from app.domain.executions import ErrorType, Execution
from app.domain.logs import LogEntry
from app.domain.metrics import NodeCounters
from app.domain.signing import callback_token, verify_callback_token
from app.domain.steps import Step
from app.domain.waits import Suspend
from app.services.grouping import Group
from app.services.outcomes import OutcomeService, log_attempt_end, log_attempt_ends

if TYPE_CHECKING:  # imported by the composition root alone, with JOBWIRE_OTEL
    from app.delivery.telemetry import Telemetry

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Completion:
    succeeded: bool
    result: Any = None
    error_message: str | None = None
    error_type: str | None = None
    retryable: bool = True
    suspend: Suspend | None = None  # outcome `suspended`: what the attempt waits for


class CallbackService:
    def __init__(
        self,
        db: Database,
        server_key: str,
        outcomes: OutcomeService,
        default_timeout: float,
        executions: ExecutionRepository | None = None,
        logs: LogRepository | None = None,
        steps: StepRepository | None = None,
        counters: NodeCounters | None = None,
        telemetry: Telemetry | None = None,
    ) -> None:
        self.db = db
        self.telemetry = telemetry  # a span per completion (JOBWIRE_OTEL); None, none
        self.server_key = server_key
        self.outcomes = outcomes
        self.default_timeout = default_timeout
        self.executions = executions or ExecutionRepository()
        self.logs = logs or LogRepository()
        self.workflows = WorkflowRepository()
        self.steps = steps or StepRepository()
        self.counters = counters or NodeCounters()
        # Success callbacks that arrive together share a statement and a commit.
        self._successes: Group[tuple[UUID, int, Any], Execution | None] = Group(
            self._succeed_each, self._succeed_one)

    async def _succeed_each(self, items: Sequence[tuple[UUID, int, Any]]) -> list[Execution | None]:
        async with self.db.autocommit() as conn:
            ended = await self.outcomes.succeed_each(conn, items)
        log_attempt_ends(log, ended)  # one statement on its own: committed
        return [a.execution if a is not None else None for a in ended]

    async def _succeed_one(self, item: tuple[UUID, int, Any]) -> Execution | None:
        [changed] = await self._succeed_each([item])
        return changed

    def token_for(self, execution_id: UUID, attempt: int) -> str:
        return callback_token(self.server_key, execution_id, attempt)

    def authorize(self, execution_id: UUID, token: str | None) -> int:
        """The attempt a callback token speaks for; 401 without one, 403 for a bad or foreign one."""
        if not token:
            raise Unauthenticated("a callback token is required: Authorization: Bearer <callback.token>")
        attempt = verify_callback_token(self.server_key, execution_id, token)
        if attempt is None:
            raise Forbidden("the callback token is not valid for this execution")
        return attempt

    async def _current(self, conn: Any, execution_id: UUID, attempt: int) -> Execution:
        current = await self.executions.get(conn, execution_id)
        if current is None:
            raise NotFound("execution", execution_id)
        if current.attempt != attempt:
            raise StaleAttempt(attempt, current.attempt)
        return current

    async def report_progress(self, execution_id: UUID, token: str | None,
                              snapshot: dict[str, Any] | None) -> bool:
        """A progress snapshot (None: a bare heartbeat). Extends the attempt's deadline; returns
        cancel_requested: true once the execution is no longer PROCESSING."""
        attempt = self.authorize(execution_id, token)
        async with self.db.transaction() as conn:
            await self._current(conn, execution_id, attempt)
            extended = await self.executions.extend_deadline(
                conn, execution_id, attempt, default_timeout=self.default_timeout, progress=snapshot)
        return not extended

    async def append_logs(self, execution_id: UUID, token: str | None, entries: Sequence[LogEntry]) -> int:
        """Store a handler's log entries under the token's attempt, which must be the current one
        (the execution may be in any state: a handler may flush its logs after completing).
        NotFound when the execution is gone, also when a purge deletes it meanwhile (the insert's
        foreign key refuses: app/db/errors.py)."""
        attempt = self.authorize(execution_id, token)
        async with self.db.transaction() as conn:
            await self._current(conn, execution_id, attempt)
            return await self.logs.append(conn, execution_id, attempt, entries)

    async def get_step(self, execution_id: UUID, token: str | None, name: str) -> Step:
        """A step recorded by any attempt of this execution; NotFound until one records it."""
        attempt = self.authorize(execution_id, token)
        async with self.db.transaction() as conn:
            await self._current(conn, execution_id, attempt)
            step = await self.steps.get(conn, execution_id, name)
        if step is None:
            raise NotFound("step", name)
        return step

    async def parents(self, execution_id: UUID, token: str | None, after: str,
                      limit: int) -> tuple[list[dict[str, Any]], str | None]:
        """A page of the execution's workflow parents by ref after `after`, with their results
        (what a dispatch leaves out past 256 KiB); the next page's `after`, or None at the end."""
        return await self._related(self.workflows.parents_page, execution_id, token, after, limit)

    async def children(self, execution_id: UUID, token: str | None, after: str,
                       limit: int) -> tuple[list[dict[str, Any]], str | None]:
        """A page of the children the execution spawned, by the refs it gave after `after`, with
        their results (what a resumed dispatch leaves out past 256 KiB); the next page's `after`."""
        return await self._related(self.workflows.spawned_page, execution_id, token, after, limit)

    async def _related(self, read: Callable[[Any, UUID, str, int], Awaitable[Sequence[Mapping[str, Any]]]],
                       execution_id: UUID, token: str | None, after: str,
                       limit: int) -> tuple[list[dict[str, Any]], str | None]:
        attempt = self.authorize(execution_id, token)
        async with self.db.transaction() as conn:
            await self._current(conn, execution_id, attempt)
            rows = await read(conn, execution_id, after, limit + 1)
        items = [dict(r) for r in rows[:limit]]
        return items, (items[-1]["ref"] if len(rows) > limit else None)

    async def record_step(self, execution_id: UUID, token: str | None, name: str, result: Any) -> tuple[Step, bool]:
        """Run-step-once: the first record of a step wins and is kept for every later attempt.
        Returns the step as stored and whether this call recorded it (False: it was recorded
        before, and this call's result is dropped)."""
        attempt = self.authorize(execution_id, token)
        async with self.db.transaction() as conn:
            await self._current(conn, execution_id, attempt)
            created = await self.steps.insert_if_absent(conn, execution_id, name, result)
            if created is not None:
                return created, True
            # Recorded before, or by a concurrent call that committed while this one waited.
            stored = await self.steps.get(conn, execution_id, name)
        if stored is None:  # steps go only with their execution: a purge removed both meanwhile
            raise NotFound("execution", execution_id)
        return stored, False

    async def complete(self, execution_id: UUID, token: str | None, completion: Completion,
                       traceparent: str | None = None) -> Execution:
        """End the token's attempt as the handler reports (an idempotent no-op when it ended
        already). With telemetry a span, a child of the current span or of `traceparent` (the
        callback request's header)."""
        if self.telemetry is None:
            return await self._complete(execution_id, token, completion)
        with self.telemetry.completing(execution_id, completion.succeeded, traceparent) as traced:
            execution = await self._complete(execution_id, token, completion)
            traced.completed(execution)
            return execution

    async def _complete(self, execution_id: UUID, token: str | None, completion: Completion) -> Execution:
        attempt = self.authorize(execution_id, token)
        if completion.suspend is not None:
            async with self.db.transaction() as conn:
                current = await self._current(conn, execution_id, attempt)
                ended = await self.outcomes.suspend(conn, execution_id, attempt, completion.suspend)
                after = await self.executions.get(conn, execution_id) or current
            if ended is not None:
                log_attempt_end(log, ended)  # committed
            return after
        if completion.succeeded:
            # The common case in one statement, one round trip, shared with the success
            # callbacks that arrive meanwhile: the write is guarded on the token's attempt, so
            # when it applies the execution exists at that attempt. When it does not, the
            # transaction below says why (404, 409, or an idempotent no-op).
            changed = await self._successes((execution_id, attempt, completion.result))
            if changed is not None:
                self.counters.completed(changed.handler, changed.queue, "succeeded")
                return changed
        async with self.db.transaction() as conn:
            current = await self._current(conn, execution_id, attempt)
            if completion.succeeded:
                ended = await self.outcomes.succeed(conn, execution_id, attempt, completion.result)
            else:
                # No HTTP status: the call's reply was the 202 that handed the attempt over.
                outcome = Outcome(
                    OutcomeKind.FAILED,
                    error=completion.error_message or "handler reported failure",
                    error_type=completion.error_type or ErrorType.HANDLER_FAILED,
                    retryable=completion.retryable,
                )
                ended = await self.outcomes.fail(conn, execution_id, attempt, outcome)
            if ended is None:
                # Zero rows: a duplicate, or no longer PROCESSING. An idempotent no-op that reports
                # the execution as it is now (another writer may have moved it since we read it).
                return await self.executions.get(conn, execution_id) or current
            if not completion.succeeded:  # a success wakes what it frees by itself
                await self.outcomes.wake_if_handed_over(conn, [ended.execution])
        log_attempt_end(log, ended)  # committed
        self.counters.completed(ended.execution.handler, ended.execution.queue,
                                "succeeded" if completion.succeeded else "failed")
        return ended.execution
