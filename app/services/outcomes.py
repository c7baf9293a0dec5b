"""Claiming work and recording what became of each attempt (dispatcher and callbacks share it)."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any
from uuid import UUID

from app.db.database import Database
from app.db.executions import ExecutionRepository
from app.db.waits import WaitRepository
from app.domain.errors import DatabaseUnavailable
from app.domain.attempts import AttemptEnd
from app.domain.dispatch import ClaimedJob, Outcome, OutcomeKind
from app.domain.executions import ErrorType, Execution
from app.domain.logfields import fields
from app.domain.retry import RetryPolicy
from app.domain.states import JobState
from app.domain.text import error_text
from app.domain.waits import MAX_SUSPENSIONS, Suspend
from app.services.flow import FlowService
from app.services.wakeups import wake_for_freed_slots

log = logging.getLogger(__name__)

_THEN = {JobState.ENQUEUED: "retrying", JobState.DEAD_LETTER: "dead-lettered",
         JobState.ABANDONED: "not retried: its schedule fires again"}


def log_attempt_end(logger: logging.Logger, ended: AttemptEnd) -> None:
    """The line of an attempt that a write ended, logged once the write committed: WARNING for a
    failed or abandoned attempt (one line, whether it is retried or dead-lettered), DEBUG for a
    success. The fields (app.domain.logfields) say which attempt, where it ran, how long it took."""
    e = ended.execution
    succeeded = ended.outcome is JobState.SUCCEEDED
    level = logging.DEBUG if succeeded else logging.WARNING
    if not logger.isEnabledFor(level):
        return
    if succeeded:
        message = "execution %s attempt %d succeeded"
        args: tuple[object, ...] = (e.id, ended.attempt)
    else:
        message = "execution %s attempt %d %s (%s), %s"
        args = (e.id, ended.attempt, "failed" if ended.outcome is JobState.FAILED else "abandoned", e.error_type,
                _THEN.get(e.state, e.state.value))
    logger.log(level, message, *args, extra=fields(
        execution_id=str(e.id), attempt=ended.attempt, handler=e.handler, queue=e.queue, node=ended.node,
        error_type=None if succeeded else e.error_type, duration_ms=ended.duration_ms, state=e.state.value))


def log_attempt_ends(logger: logging.Logger, ended: Sequence[AttemptEnd | None]) -> None:
    for one in ended:
        if one is not None:
            log_attempt_end(logger, one)


@dataclass(frozen=True, slots=True)
class ClaimConfig:
    node_id: str
    queues: tuple[str, ...]
    default_timeout: float


class OutcomeService:
    def __init__(
        self,
        db: Database,
        retry: RetryPolicy,
        claim_config: ClaimConfig,
        executions: ExecutionRepository | None = None,
        flow: FlowService | None = None,
    ) -> None:
        self.db = db
        self.retry = retry
        self.claim_config = claim_config
        self.executions = executions or ExecutionRepository()
        self.flow = flow or FlowService(db)
        self.waits = WaitRepository()

    async def claim(self, n: int) -> list[ClaimedJob]:
        c = self.claim_config
        # One statement, its own transaction: one round trip.
        async with self.db.autocommit() as conn:
            return await self.executions.claim(conn, c.node_id, n, c.queues, c.default_timeout)

    async def seconds_to_next_rate_slot(self) -> float | None:
        """Seconds until a job held back by a rate limit may start (negative: it may now); None when
        no job waits for a rate limit."""
        async with self.db.autocommit() as conn:
            return await self.executions.seconds_to_next_rate_slot(conn)

    async def seconds_left(self, execution_id: UUID, attempt: int) -> float | None:
        """Seconds until the attempt's deadline as the database has it now (heartbeats move it);
        None once it is no longer PROCESSING at that attempt."""
        async with self.db.autocommit() as conn:
            return await self.executions.seconds_left(conn, execution_id, attempt)

    async def release_untracked(self, tracked: Sequence[UUID]) -> int:
        """Put back (ENQUEUED, same attempt) what this node holds but is not working on: rows a
        claim committed although its reply was lost with the connection. Their calls were never
        made, so no attempt is spent and nothing runs twice."""
        total = 0
        while True:
            async with self.db.transaction() as conn:
                released = await self.executions.release_undispatched(
                    conn, self.claim_config.node_id, 500, keep=tracked)
                if released:
                    await self.executions.notify(conn, self.db.notify_channel)
            total += len(released)
            if len(released) < 500:
                return total

    async def record(self, results: Sequence[tuple[ClaimedJob, Outcome]]) -> None:
        """Record a batch of dispatch outcomes in one transaction.

        DatabaseUnavailable propagates: the caller keeps the batch and tries again (every write
        is guarded, so re-applying a recorded outcome is a no-op). Any other error isolates the
        culprit by recording one by one; an outcome that cannot be written at all is logged and
        left to the deadline scan, which abandons and retries its attempt.

        First the replies move their handlers' flow state (circuit, Retry-After, adaptive limits);
        a refusal the adaptive limiter takes back is recorded as REFUSED. That state is advisory:
        when it cannot be written, the outcomes are recorded all the same.
        """
        results = await self._refusals_taken_back(results)
        try:
            kinds = {outcome.kind for _, outcome in results}
            if kinds == {OutcomeKind.SUCCEEDED} or kinds == {OutcomeKind.ACCEPTED}:
                # The common batches are one statement: no BEGIN and COMMIT round trips.
                async with self.db.autocommit() as conn:
                    ended = await self._record(conn, results)
            else:
                async with self.db.transaction() as conn:
                    ended = await self._record(conn, results)
        except DatabaseUnavailable:
            raise
        except Exception:
            if len(results) == 1:
                log.exception("recording the outcome of execution %s failed", results[0][0].id)
                return
            log.exception("recording %d outcomes together failed; recording them one by one", len(results))
        else:
            log_attempt_ends(log, ended)  # committed: a batch rolled back above logged nothing
            return
        for one in results:
            try:
                async with self.db.transaction() as conn:
                    ended = await self._record(conn, [one])
            except DatabaseUnavailable:
                raise
            except Exception:
                log.exception("recording the outcome of execution %s failed", one[0].id)
            else:
                log_attempt_ends(log, ended)

    async def _refusals_taken_back(
            self, results: Sequence[tuple[ClaimedJob, Outcome]]) -> Sequence[tuple[ClaimedJob, Outcome]]:
        try:
            refused = await self.flow.observe(results)
        except DatabaseUnavailable:
            raise
        except Exception:
            log.exception("recording the flow state of %d replies failed", len(results))
            return results
        if not refused:
            return results
        return [(job, Outcome(OutcomeKind.REFUSED, error=outcome.error, http_status=outcome.http_status)
                 if job.id in refused else outcome) for job, outcome in results]

    async def _record(self, conn: Any, results: Sequence[tuple[ClaimedJob, Outcome]]) -> list[AttemptEnd]:
        """Write the outcomes; returns the attempts they ended (successes only when logged at DEBUG:
        the hot path's statement returns no rows)."""
        succeeded = [(j.id, j.attempt, o.result) for j, o in results if o.kind is OutcomeKind.SUCCEEDED]
        statuses = [o.http_status for _, o in results if o.kind is OutcomeKind.SUCCEEDED]
        accepted = [(j.id, j.attempt) for j, o in results if o.kind is OutcomeKind.ACCEPTED]
        ended: list[AttemptEnd] = []
        if succeeded:
            if log.isEnabledFor(logging.DEBUG):
                ended += await self.executions.succeed_attempts(conn, succeeded, self.db.notify_channel, statuses)
            else:
                await self.executions.succeed_quietly(conn, succeeded, self.db.notify_channel, statuses)
        if accepted:
            await self.executions.release_to_handler(conn, self.claim_config.node_id, accepted)
        refused = [(j.id, j.attempt) for j, o in results if o.kind is OutcomeKind.REFUSED]
        if refused and await self.executions.release_refused(conn, refused):
            await self.executions.notify(conn, self.db.notify_channel)
        failed: list[AttemptEnd] = []  # successes wake what they free themselves
        for job, outcome in results:
            if outcome.kind in (OutcomeKind.FAILED, OutcomeKind.ABANDONED):
                one = await self.fail(conn, job.id, job.attempt, outcome)
                if one is not None:
                    failed.append(one)
            elif outcome.kind is OutcomeKind.SUSPENDED and outcome.suspend is not None:
                one = await self.suspend(conn, job.id, job.attempt, outcome.suspend, outcome.http_status)
                if one is not None:
                    failed.append(one)
        await self.wake_if_handed_over(conn, [a.execution for a in failed])
        return ended + failed

    async def wake_if_handed_over(self, conn: Any, ended: Sequence[Execution | None]) -> None:
        await wake_for_freed_slots(self.db, self.executions, conn, ended)

    async def fail(self, conn: Any, execution_id: UUID, attempt: int, outcome: Outcome) -> AttemptEnd | None:
        """Record a failed or abandoned attempt (and its retry); None when it no longer applies.
        The caller logs the attempt (log_attempt_end) once its transaction committed."""
        abandoned = outcome.kind is OutcomeKind.ABANDONED
        if abandoned:
            delay = 0.0  # as the coordinator's scan: abandoning is not the job's fault, retry at once
        elif outcome.retry_after is not None:
            delay = outcome.retry_after
        else:
            delay = self.retry.delay(attempt)
        error_type = outcome.error_type or (ErrorType.ABANDONED_DEADLINE if abandoned else ErrorType.HANDLER_FAILED)
        return await self.executions.end_attempt(
            conn,
            execution_id,
            attempt,
            cause=JobState.ABANDONED if abandoned else JobState.FAILED,
            error=error_text(outcome.error or ""),
            error_type=error_type,
            retryable=outcome.retryable,
            delay=delay,
            # A call still open at its deadline: only if the deadline (moved by heartbeats) has passed.
            at_deadline=abandoned and error_type == ErrorType.ABANDONED_DEADLINE,
            http_status=outcome.http_status,
        )

    async def suspend(self, conn: Any, execution_id: UUID, attempt: int, spec: Suspend,
                      http_status: int | None = None) -> AttemptEnd | None:
        """A handler's suspend of its attempt: WAITING with the same attempt until its wait is over
        (resumed at once when it is over already: a signal it names came first, an `until` past).
        The 101st suspension of an execution is a failure (too_many_suspensions), not retried; it
        is the only outcome returned (to be logged)."""
        suspensions = await self.waits.suspensions(conn, execution_id, attempt)
        if suspensions is None:
            return None  # no longer PROCESSING at that attempt: an idempotent no-op
        if suspensions >= MAX_SUSPENSIONS:
            return await self.fail(conn, execution_id, attempt, Outcome(
                OutcomeKind.FAILED, error=f"suspended more than {MAX_SUSPENSIONS} times",
                error_type=ErrorType.TOO_MANY_SUSPENSIONS, retryable=False, http_status=http_status))
        handler = await self.waits.suspend(conn, execution_id, attempt, spec)
        if handler is None:
            return None
        resumed = await self.waits.resume(conn, [execution_id])
        if resumed:
            await self.executions.notify(conn, self.db.notify_channel, resumed[0])
        # Its slot is free: a limited handler's waiting work may go now.
        await self.executions.notify_if_limited(conn, self.db.notify_channel, [handler])
        return None

    async def succeed(self, conn: Any, execution_id: UUID, attempt: int, result: Any) -> AttemptEnd | None:
        """Record one success (waking the dispatchers when it frees work); None when the attempt
        may no longer succeed."""
        [done] = await self.succeed_each(conn, [(execution_id, attempt, result)])
        return done

    async def succeed_each(self, conn: Any, items: Sequence[tuple[UUID, int, Any]]) -> list[AttemptEnd | None]:
        """Record successes (id, attempt, result) reported by completion callbacks (no HTTP
        status: the call's reply was the 202) in one statement: per item the attempt it ended,
        or None where the attempt may no longer succeed (and for an execution named again later
        in `items`: the first of them applied, if any did)."""
        done = await self.executions.succeed_attempts(conn, items, self.db.notify_channel)
        changed = {a.execution.id: a for a in done}
        return [changed.pop(execution_id, None) for execution_id, _, _ in items]
