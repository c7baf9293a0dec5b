"""Backpressure from the handler: what each reply says about a handler's health, and the state it
moves. Pure: app/services/flow.py reads the state under a row lock (database time `now`), runs
these, and writes the result back, so every node shares it.

- **Circuit breaker** (per handler): CIRCUIT_FAILURES consecutive connection failures, timeouts
  or 5xx replies open it: no calls for 1 s, doubling on each reopening up to 60 s; then the claim
  lets one probe call through (half open), whose success closes it and whose failure reopens it.
- **Retry-After** (per handler, or per key when the job has one): a 429 or 503 with Retry-After
  holds further calls until the time passes.
- **Adaptive concurrency** (opt-in, per handler for jobs without a key, per key for jobs with one):
  slow start from min(max_concurrency, 4), doubling after each limit's worth of successes, until
  the first overload (a 429 or 503 without Retry-After, or a timeout) halves it (never below 1);
  after that every ADAPTIVE_STEP successes add one, up to max_concurrency (AIMD, as TCP).
  A 429 is a refusal: its job goes back ENQUEUED with the same attempt, unless MAX_REFUSALS
  came in a row before it (then it is a failed attempt, so a handler that always refuses still
  ends in dead letter).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from enum import StrEnum

from app.domain.dispatch import Outcome, OutcomeKind
from app.domain.executions import ErrorType

CIRCUIT_FAILURES = 5
CIRCUIT_FIRST_OPEN_SECONDS = 1.0
CIRCUIT_MAX_OPEN_SECONDS = 60.0
ADAPTIVE_START = 4
ADAPTIVE_STEP = 20
MAX_REFUSALS = 20


@dataclass(frozen=True, slots=True)
class Reply:
    """What one dispatch's reply says about its handler (and its key)."""

    ok: bool  # 2xx, 202 included: the handler took the call
    failure: bool  # a connection failure, a timeout or a 5xx: counts toward the circuit
    overload: bool  # a 429 or 503 without Retry-After, or a timeout: an adaptive limit halves
    refused: bool  # a 429
    retry_after: float | None  # a 429 or 503 with Retry-After: hold calls this many seconds


def reply_of(outcome: Outcome) -> Reply:
    status = outcome.http_status
    timeout = outcome.kind is OutcomeKind.ABANDONED and outcome.error_type == ErrorType.ABANDONED_DEADLINE
    ok = outcome.kind in (OutcomeKind.SUCCEEDED, OutcomeKind.ACCEPTED, OutcomeKind.SUSPENDED)
    busy = status in (429, 503)
    return Reply(
        ok=ok,
        failure=not ok and (timeout or outcome.error_type == ErrorType.CONNECTION
                            or (status is not None and status >= 500)),
        overload=timeout or (busy and outcome.retry_after is None),
        refused=status == 429,
        retry_after=outcome.retry_after if busy else None,
    )


def moves_flow(reply: Reply) -> bool:
    """A reply that changes flow state whatever it was before (a success only resets what the
    claim said was set: ClaimedJob.flow_watch)."""
    return reply.failure or reply.overload or reply.refused or reply.retry_after is not None


class CircuitState(StrEnum):
    CLOSED = "closed"
    OPEN = "open"
    HALF_OPEN = "half_open"


@dataclass(frozen=True, slots=True)
class Circuit:
    state: CircuitState = CircuitState.CLOSED
    until: datetime | None = None  # open: no call before it; half open: the probe's deadline
    failures: int = 0  # consecutive
    open_seconds: float = 0.0  # how long it last opened for (doubles on each reopening)


def circuit_after(circuit: Circuit, replies: list[Reply], now: datetime) -> Circuit:
    c = circuit
    for reply in replies:
        if reply.ok:
            if c.state is CircuitState.HALF_OPEN:
                c = Circuit()  # the probe succeeded
            else:
                c = replace(c, failures=0)  # open stays open until its time: calls made before it
        elif reply.failure:
            c = replace(c, failures=c.failures + 1)
            if c.state is CircuitState.HALF_OPEN:
                seconds = min(max(c.open_seconds * 2, CIRCUIT_FIRST_OPEN_SECONDS), CIRCUIT_MAX_OPEN_SECONDS)
                c = replace(c, state=CircuitState.OPEN, open_seconds=seconds, until=now + timedelta(seconds=seconds))
            elif c.state is CircuitState.CLOSED and c.failures >= CIRCUIT_FAILURES:
                seconds = CIRCUIT_FIRST_OPEN_SECONDS
                c = replace(c, state=CircuitState.OPEN, open_seconds=seconds, until=now + timedelta(seconds=seconds))
    return c


@dataclass(frozen=True, slots=True)
class Adaptive:
    limit: int | None = None  # None: not started (min(max_concurrency, ADAPTIVE_START))
    since: datetime | None = None  # when the limit last changed
    successes: int = 0  # toward the next raise
    slow_start: bool = True
    refusals: int = 0  # 429s in a row


@dataclass(frozen=True, slots=True)
class AdaptiveStep:
    state: Adaptive
    released: tuple[bool, ...]  # per reply: a refusal put back ENQUEUED with the same attempt


def adaptive_after(adaptive: Adaptive, ceiling: int, replies: list[Reply], now: datetime,
                   enabled: bool = True) -> AdaptiveStep:
    """The limiter after `replies` (in order); with `enabled` off (a handler that is not adaptive)
    it only counts refusals, and releases none."""
    a = adaptive
    if a.limit is None:
        a = replace(a, limit=min(ceiling, ADAPTIVE_START), since=now)
    released: list[bool] = []
    for reply in replies:
        limit = a.limit or 1
        if reply.ok:
            a = replace(a, refusals=0, successes=a.successes + 1)
            step = limit if a.slow_start else ADAPTIVE_STEP
            if enabled and a.successes >= step:
                grown = min(limit * 2 if a.slow_start else limit + 1, ceiling)
                a = replace(a, successes=0, limit=grown, since=now if grown != limit else a.since)
        elif reply.overload and enabled:
            halved = max(1, limit // 2)
            a = replace(a, limit=halved, slow_start=False, successes=0, since=now if halved != limit else a.since)
        if reply.refused:
            released.append(enabled and a.refusals < MAX_REFUSALS)
            a = replace(a, refusals=a.refusals + 1)
        else:
            released.append(False)
    return AdaptiveStep(a, tuple(released))
