"""What a reply says about its handler (app/domain/flow.py): the circuit breaker's states, the
adaptive limiter's slow start and AIMD, and refusals, as pure functions of replies in order."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from app.domain.dispatch import Outcome, OutcomeKind
from app.domain.executions import ErrorType
from app.domain.flow import (
    ADAPTIVE_STEP,
    MAX_REFUSALS,
    Adaptive,
    Circuit,
    CircuitState,
    Reply,
    adaptive_after,
    circuit_after,
    moves_flow,
    reply_of,
)

NOW = datetime(2026, 12, 2, 12, 0, tzinfo=UTC)
OK = Reply(ok=True, failure=False, overload=False, refused=False, retry_after=None)
FAIL = Reply(ok=False, failure=True, overload=False, refused=False, retry_after=None)
BUSY = Reply(ok=False, failure=False, overload=True, refused=True, retry_after=None)  # a 429
NOT_FOUND = Reply(ok=False, failure=False, overload=False, refused=False, retry_after=None)


def test_replies_are_read_as_the_signals_they_are() -> None:
    assert reply_of(Outcome(OutcomeKind.SUCCEEDED, http_status=200)) == OK
    assert reply_of(Outcome(OutcomeKind.ACCEPTED, http_status=202)).ok
    assert reply_of(Outcome(OutcomeKind.FAILED, http_status=500, error_type=ErrorType.HTTP_STATUS)) == FAIL
    assert reply_of(Outcome(OutcomeKind.FAILED, error_type=ErrorType.CONNECTION)) == FAIL
    timeout = reply_of(Outcome(OutcomeKind.ABANDONED, error_type=ErrorType.ABANDONED_DEADLINE))
    assert timeout.failure and timeout.overload and not timeout.refused
    assert reply_of(Outcome(OutcomeKind.FAILED, http_status=429, error_type=ErrorType.HTTP_STATUS)) == BUSY
    held = reply_of(Outcome(OutcomeKind.FAILED, http_status=503, retry_after=2.0))
    assert held.failure and not held.overload and held.retry_after == 2.0  # a 5xx, and a pause, not an overload
    assert reply_of(Outcome(OutcomeKind.FAILED, http_status=404)) == NOT_FOUND
    assert not moves_flow(OK) and not moves_flow(NOT_FOUND) and moves_flow(FAIL) and moves_flow(BUSY)


def test_five_failures_in_a_row_open_the_circuit_for_a_second() -> None:
    c = circuit_after(Circuit(), [FAIL] * 4, NOW)
    assert c == Circuit(failures=4)
    c = circuit_after(c, [FAIL], NOW)
    assert (c.state, c.until, c.open_seconds) == (CircuitState.OPEN, NOW + timedelta(seconds=1), 1.0)


def test_a_success_between_failures_starts_the_count_again() -> None:
    assert circuit_after(Circuit(), [FAIL] * 4 + [OK] + [FAIL] * 4, NOW) == Circuit(failures=4)
    assert circuit_after(Circuit(), [FAIL, NOT_FOUND, FAIL], NOW).failures == 2  # a 404 is no sign either way


def test_a_failed_probe_reopens_for_twice_as_long_up_to_a_minute_and_a_good_one_closes() -> None:
    probing = Circuit(state=CircuitState.HALF_OPEN, until=NOW, failures=5, open_seconds=1.0)
    c = circuit_after(probing, [FAIL], NOW)
    assert (c.state, c.open_seconds, c.until) == (CircuitState.OPEN, 2.0, NOW + timedelta(seconds=2))
    seconds = []
    for _ in range(8):
        c = circuit_after(Circuit(state=CircuitState.HALF_OPEN, failures=5, open_seconds=c.open_seconds), [FAIL], NOW)
        seconds.append(c.open_seconds)
    assert seconds == [4, 8, 16, 32, 60, 60, 60, 60]
    assert circuit_after(probing, [OK], NOW) == Circuit()
    # Then the next opening is a second again.
    assert circuit_after(Circuit(), [FAIL] * 5, NOW).open_seconds == 1.0


def test_an_adaptive_limit_starts_slow_and_doubles_until_the_first_overload() -> None:
    step = adaptive_after(Adaptive(), 64, [OK] * 4, NOW)
    assert step.state.limit == 8
    step = adaptive_after(step.state, 64, [OK] * (8 + 16 + 32), NOW)
    assert step.state.limit == 64  # never past max_concurrency
    step = adaptive_after(Adaptive(), 3, [OK] * 10, NOW)
    assert step.state.limit == 3  # min(max_concurrency, 4) to start, and its ceiling


def test_an_overload_halves_then_each_twenty_successes_add_one() -> None:
    step = adaptive_after(Adaptive(limit=16), 64, [BUSY], NOW)
    assert (step.state.limit, step.state.slow_start) == (8, False)
    step = adaptive_after(step.state, 64, [OK] * (ADAPTIVE_STEP - 1), NOW)
    assert step.state.limit == 8
    step = adaptive_after(step.state, 64, [OK], NOW)
    assert step.state.limit == 9
    assert adaptive_after(Adaptive(limit=1, slow_start=False), 64, [BUSY] * 3, NOW).state.limit == 1  # never below 1


def test_a_refusal_is_taken_back_until_twenty_come_in_a_row() -> None:
    step = adaptive_after(Adaptive(limit=4), 8, [BUSY] * (MAX_REFUSALS + 2), NOW)
    assert step.released == (True,) * MAX_REFUSALS + (False, False)
    step = adaptive_after(step.state, 8, [OK, BUSY], NOW)
    assert step.released == (False, True)  # a success ends the run
    # Not adaptive: nothing is taken back and the limit does not move.
    off = adaptive_after(Adaptive(), 8, [BUSY, OK], NOW, enabled=False)
    assert off.released == (False, False)
