"""Claim → HTTP call → outcome, with at most `concurrency` calls in flight.

Wakes on NOTIFY (via wake()) and polls every poll_interval as a fallback (future-dated jobs,
lost notifications). No transaction is open during an HTTP call: the claim commits first and
the outcome is written in a later transaction.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from uuid import UUID

from app.dispatcher.batching import Gathering, Group
from app.dispatcher.completer import Completer
from app.domain.errors import DatabaseUnavailable
from app.domain.logfields import fields
from app.domain.dispatch import ClaimedJob, Outcome, OutcomeKind
from app.domain.executions import ErrorType
from app.domain.metrics import NodeCounters
from app.delivery.dispatch import call_handler, call_handler_batch
from app.delivery.secret_cipher import PLAIN, SecretCipher
from app.delivery.transport import Transport
from app.services.outcomes import OutcomeService

if TYPE_CHECKING:  # imported by the composition root alone, with JOBWIRE_OTEL
    from app.delivery.telemetry import Telemetry

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class DispatcherConfig:
    concurrency: int
    poll_interval: float
    public_url: str
    retry_max_delay: float
    max_claim_batch: int = 200


class Dispatcher:
    def __init__(
        self,
        config: DispatcherConfig,
        outcomes: OutcomeService,
        transport: Transport,
        token_for: Callable[[UUID, int], str],
        counters: NodeCounters | None = None,
        expect_deadline: Callable[[float], None] | None = None,
        cipher: SecretCipher = PLAIN,
        telemetry: Telemetry | None = None,
    ) -> None:
        """expect_deadline(seconds): told the soonest deadline of each claim, so the node's
        deadline scan can wake for it (an accepted attempt whose handler goes quiet). cipher:
        reads the handlers' stored signing secrets (JOBWIRE_SECRET_KEY). telemetry: a span and
        histograms per call (JOBWIRE_OTEL); None, none."""
        self.config = config
        self.outcomes = outcomes
        self.transport = transport
        self.token_for = token_for
        self.counters = counters or NodeCounters()
        self.expect_deadline = expect_deadline
        self.cipher = cipher
        self.telemetry = telemetry
        # Each call's task and its jobs (a batch call's grow while its group gathers): one slot per job.
        self._in_flight: dict[asyncio.Task[None], list[ClaimedJob]] = {}
        self.completer: Completer[tuple[ClaimedJob, Outcome]] = Completer(outcomes.record,
                                                                          expected=self._calls_running)
        self._jobs_in_flight = 0
        self._gathering = Gathering()
        self._wake = asyncio.Event()
        self._slot_freed = asyncio.Event()
        self._stopping = False
        self._loop_task: asyncio.Task[None] | None = None
        # A claim that failed mid-flight may have committed: reconcile before the next claim.
        self._claim_uncertain = False

    @property
    def in_flight(self) -> int:
        """Jobs claimed and not yet ended here (a batch call counts each of its jobs)."""
        return self._jobs_in_flight

    def wake(self) -> None:
        """New work may be due (a NOTIFY arrived)."""
        self._wake.set()

    def start(self) -> None:
        self.completer.start()
        self._loop_task = asyncio.create_task(self._run(), name="jobwire-dispatcher")

    async def run_once(self) -> int:
        """Claim as many due jobs as there are free slots and start their calls; returns the count."""
        free = min(self.config.concurrency - self._jobs_in_flight, self.config.max_claim_batch)
        if free <= 0:
            return 0
        jobs = await self.outcomes.claim(free)
        self.counters.claims += 1
        self.counters.claimed(jobs)
        if jobs and self.expect_deadline is not None:
            self.expect_deadline(min(job.seconds_left for job in jobs))
        now = asyncio.get_running_loop().time()
        for job in jobs:
            self._jobs_in_flight += 1
            if job.batch is None:
                self._start(self._execute(job), [job], f"jobwire-call-{job.id}")
                continue
            # A batching handler's job joins its open group (no await until every job is placed:
            # a group sent at once still holds all of this claim's jobs, up to max_size).
            group = self._gathering.place(job, now)
            if group is not None:
                self._start(self._execute_batch(group), group.jobs, f"jobwire-batch-{job.id}")
        if self._jobs_in_flight >= self.config.concurrency:
            self._gathering.close_all()  # no slot is left for a job to join a group: send them now
        return len(jobs)

    def _start(self, call: Coroutine[Any, Any, None], jobs: list[ClaimedJob], name: str) -> None:
        task = asyncio.create_task(call, name=name)
        self._in_flight[task] = jobs
        task.add_done_callback(self._call_done)

    async def _run(self) -> None:
        while not self._stopping:
            if self._jobs_in_flight >= self.config.concurrency:
                self._slot_freed.clear()
                await self._slot_freed.wait()
                continue
            asked = min(self.config.concurrency - self._jobs_in_flight, self.config.max_claim_batch)
            self._wake.clear()
            try:
                if self._claim_uncertain:
                    await self._reconcile()
                claimed = await self.run_once()
            except DatabaseUnavailable as exc:
                self._claim_uncertain = True
                log.warning("claiming failed, database unavailable (%s); retrying in %.1fs", exc,
                            self.config.poll_interval)
                await self._sleep_or_wake(self.config.poll_interval)
                continue
            except Exception:
                log.exception("claiming failed; retrying in %.1fs", self.config.poll_interval)
                await self._sleep_or_wake(self.config.poll_interval)
                continue
            if claimed < asked:
                # Nothing more is due: sleep until a NOTIFY or the next poll, or until a rate
                # limit's next slot (no NOTIFY says that a window has moved on).
                await self._sleep_or_wake(await self._idle_wait())

    async def _idle_wait(self) -> float:
        """The fallback poll, or less: until a rate limit's next slot when work waits for one (a
        slot that came while the claim ran: a short pause, then claim again)."""
        try:
            slot = await self.outcomes.seconds_to_next_rate_slot()
        except Exception:  # the next claim says what is wrong
            return self.config.poll_interval
        if slot is None:
            return self.config.poll_interval
        return min(self.config.poll_interval, slot if slot > 0.001 else 0.005)

    async def _reconcile(self) -> None:
        tracked = [job.id for jobs in self._in_flight.values() for job in jobs]
        tracked += [job.id for job, _ in self.completer.buffered()]
        released = await self.outcomes.release_untracked(tracked)
        self._claim_uncertain = False
        if released:
            log.warning("re-enqueued %d executions claimed by a claim whose reply was lost", released)

    async def _sleep_or_wake(self, seconds: float) -> None:
        try:
            await asyncio.wait_for(self._wake.wait(), timeout=seconds)
        except TimeoutError:
            pass

    async def _execute(self, job: ClaimedJob) -> None:
        callback_url = f"{self.config.public_url}/v1/executions/{job.id}"
        traced = None if self.telemetry is None else self.telemetry.dispatch(job)
        began = time.monotonic()
        outcome: Outcome | None = None
        try:
            outcome = await call_handler(self.transport, job, callback_url, self.token_for(job.id, job.attempt),
                                         self.config.retry_max_delay,
                                         seconds_left=lambda: self.outcomes.seconds_left(job.id, job.attempt),
                                         cipher=self.cipher, trace_headers=None if traced is None else traced.headers)
        except asyncio.CancelledError:
            # Shutdown grace ran out: the attempt is abandoned (and retried by whoever claims next).
            outcome = Outcome(OutcomeKind.ABANDONED, error="node shut down during the call",
                              error_type=ErrorType.ABANDONED_SHUTDOWN)
            self.completer.add((job, outcome))
            self.counters.called(job, OutcomeKind.ABANDONED, time.monotonic() - began)
            raise
        except Exception as exc:  # a bug here must not strand the row in PROCESSING
            log.exception("dispatching execution %s failed", job.id)
            outcome = Outcome(OutcomeKind.FAILED, error=f"internal dispatch error: {exc!r}",
                              error_type=ErrorType.CONNECTION)
        finally:
            if traced is not None:  # in this task, which made its span current
                traced.end(outcome, time.monotonic() - began)
        self.completer.add((job, outcome))
        self.counters.called(job, outcome.kind, time.monotonic() - began)

    async def _execute_batch(self, group: Group) -> None:
        """One call for a batching handler's group (app/dispatcher/batching.py), once it gathered;
        an outcome per job, recorded as a single call's. The call's span, when traced, is its
        first job's."""
        try:
            jobs = await group.gathered()
        except asyncio.CancelledError:  # cut short before its call: nothing was sent
            self._abandon(group.jobs, time.monotonic())
            raise
        traced = None if self.telemetry is None else self.telemetry.dispatch(jobs[0])
        began = time.monotonic()
        outcomes: list[Outcome] | None = None
        try:
            outcomes = await call_handler_batch(
                self.transport, jobs,
                [(f"{self.config.public_url}/v1/executions/{job.id}", self.token_for(job.id, job.attempt))
                 for job in jobs],
                self.config.retry_max_delay, seconds_left=lambda: self._soonest_left(jobs), cipher=self.cipher,
                trace_headers=None if traced is None else traced.headers)
        except asyncio.CancelledError:
            self._abandon(jobs, began)
            raise
        except Exception as exc:  # a bug here must not strand the rows in PROCESSING
            log.exception("dispatching a batch of %d executions (%s first) failed", len(jobs), jobs[0].id)
            outcomes = [Outcome(OutcomeKind.FAILED, error=f"internal dispatch error: {exc!r}",
                                error_type=ErrorType.CONNECTION, shared=True)] * len(jobs)
        finally:
            if traced is not None:
                traced.end(outcomes[0] if outcomes else None, time.monotonic() - began)
        seconds = time.monotonic() - began
        for job, outcome in zip(jobs, outcomes, strict=True):
            self.completer.add((job, outcome))
            self.counters.called(job, outcome.kind, seconds)

    def _abandon(self, jobs: list[ClaimedJob], began: float) -> None:
        """Shutdown grace ran out: each job's attempt is abandoned (and retried by whoever claims next)."""
        outcome = Outcome(OutcomeKind.ABANDONED, error="node shut down during the call",
                          error_type=ErrorType.ABANDONED_SHUTDOWN, shared=True)
        for job in jobs:
            self.completer.add((job, outcome))
            self.counters.called(job, OutcomeKind.ABANDONED, time.monotonic() - began)

    async def _soonest_left(self, jobs: list[ClaimedJob]) -> float | None:
        """A batch call's deadline probe: the seconds left of the soonest deadline among its jobs
        still running (heartbeats move each); None when none is."""
        left = [s for s in [await self.outcomes.seconds_left(job.id, job.attempt) for job in jobs] if s is not None]
        return min(left) if left else None

    def _calls_running(self) -> bool:
        """Whether a call is still under way, its outcomes to come: a call's task adds them to the
        completer as it ends, and is done from then on (though still listed until _call_done)."""
        return any(not task.done() for task in self._in_flight)

    def _call_done(self, task: asyncio.Task[None]) -> None:
        self._jobs_in_flight -= len(self._in_flight.pop(task, ()))
        self._slot_freed.set()

    async def stop(self, grace: float, cut_short: asyncio.Event | None = None) -> None:
        """Stop claiming, let calls finish for up to `grace` seconds, abandon the rest, write outcomes.

        Says what it waits for: how many calls and for how long, then a line as each finishes.
        `cut_short` set (a second Ctrl-C) ends the wait at once: the calls left are abandoned and
        re-enqueued as when the grace runs out."""
        self._stopping = True
        self._gathering.close_all()
        self._wake.set()
        self._slot_freed.set()
        if self._loop_task is not None:
            await asyncio.gather(self._loop_task, return_exceptions=True)
        self._gathering.close_all()  # a group a claim running meanwhile opened
        await self._drain(grace, cut_short)
        await self.completer.close()

    async def _drain(self, grace: float, cut_short: asyncio.Event | None) -> None:
        calls = dict(self._in_flight)
        if not calls:
            return
        hint = " (interrupt again to stop waiting: the calls left are abandoned and re-enqueued)" if cut_short else ""
        log.info("draining %d calls, up to %s s%s", len(calls), f"{grace:g}", hint,
                 extra=fields(calls=len(calls), grace_seconds=grace))
        pending = set(calls)
        interrupt = asyncio.ensure_future((cut_short or asyncio.Event()).wait())
        interrupted = False
        deadline = asyncio.get_running_loop().time() + grace
        try:
            while pending and not interrupted:
                left = deadline - asyncio.get_running_loop().time()
                if left <= 0:
                    break
                done, _ = await asyncio.wait(pending | {interrupt}, timeout=left,
                                             return_when=asyncio.FIRST_COMPLETED)
                for task in sorted(done & pending, key=lambda t: str(calls[t][0].id)):
                    pending.discard(task)
                    log.info("call of execution %s finished; %d left", calls[task][0].id, len(pending),
                             extra=fields(execution=str(calls[task][0].id), calls_left=len(pending)))
                interrupted = interrupt in done
        finally:
            interrupt.cancel()
        if pending:
            why = "interrupted again" if interrupted else "shutdown grace over"
            log.warning("%s: abandoning %d calls (they are re-enqueued)", why, len(pending),
                        extra=fields(calls=len(pending)))
            for task in pending:
                task.cancel()
            await asyncio.gather(*pending, return_exceptions=True)
