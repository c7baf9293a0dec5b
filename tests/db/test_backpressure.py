"""Backpressure from the handler through OutcomeService.record and the claim, on the real database:
the circuit breaker opens, lets one probe through and closes; a Retry-After holds a handler or one
key; an adaptive handler's refusals go back ENQUEUED with their attempt and halve its limit. Time
is the database's: a test moves circuit_until and retry_after instead of sleeping."""

from __future__ import annotations

from collections.abc import Sequence

from app.db.database import Database
from app.domain.dispatch import ClaimedJob, Outcome, OutcomeKind
from app.domain.executions import ErrorType
from app.domain.retry import RetryPolicy
from app.services.outcomes import ClaimConfig, OutcomeService
from tests.conftest import sql
from tests.db.test_flow_claim import add_handler
from tests.db.test_stateful_claim import claim, enqueue, job

DOWN = Outcome(OutcomeKind.FAILED, error="connection refused", error_type=ErrorType.CONNECTION)
OK = Outcome(OutcomeKind.SUCCEEDED, http_status=200)
SLOW_DOWN = Outcome(OutcomeKind.FAILED, error="HTTP 429", error_type=ErrorType.HTTP_STATUS, http_status=429)


def held(seconds: float) -> Outcome:
    return Outcome(OutcomeKind.FAILED, error="HTTP 429", error_type=ErrorType.HTTP_STATUS, http_status=429,
                   retry_after=seconds)


async def record(db: Database, claimed: Sequence[ClaimedJob], outcome: Outcome) -> None:
    service = OutcomeService(db, RetryPolicy(base_delay=0.0, max_delay=0.0), ClaimConfig("node-1", (), 60.0))
    await service.record([(c, outcome) for c in claimed])


async def circuit(db: Database, handler: str = "h") -> tuple[str, int]:
    [(state, failures)] = await sql(db, "SELECT circuit_state, circuit_failures FROM job_handler_flow "
                                        "WHERE handler = :h", h=handler)
    return state, failures


async def time_passes(db: Database) -> None:
    await sql(db, "UPDATE job_handler_flow SET circuit_until = now() - interval '1 ms', "
                  "retry_after = now() - interval '1 ms'")
    await sql(db, "UPDATE job_keys SET retry_after = now() - interval '1 ms'")


async def test_five_failures_open_the_circuit_one_probe_goes_and_its_success_closes_it(db: Database) -> None:
    await add_handler(db)
    await add_handler(db, "other")
    await enqueue(db, [job(f"j{i}", max_attempts=10) for i in range(20)] + [job("o", handler="other")])
    first = await claim(db, n=5)
    await record(db, first[:4], DOWN)
    assert await circuit(db) == ("closed", 4)
    await record(db, first[4:], DOWN)
    assert await circuit(db) == ("open", 5)
    assert [c.handler for c in await claim(db, n=50)] == ["other"]  # no call to h; the others go on

    await time_passes(db)
    [probe] = await claim(db, n=50)
    assert probe.flow_watch and await circuit(db) == ("half_open", 5)
    assert await claim(db, n=50) == []  # one probe at a time
    await record(db, [probe], DOWN)
    [(state, seconds)] = await sql(db, "SELECT circuit_state, circuit_open_seconds FROM job_handler_flow "
                                       "WHERE handler = 'h'")
    assert (state, seconds) == ("open", 2.0)  # reopened for twice as long

    await time_passes(db)
    [probe] = await claim(db, n=50)
    await record(db, [probe], OK)
    assert await circuit(db) == ("closed", 0)
    assert len(await claim(db, n=50)) > 1  # calls go out again


async def test_any_success_ends_a_run_of_failures_whoever_claimed_it(db: Database) -> None:
    """Node 1 claimed before the failures were counted; its success still starts the count again."""
    await add_handler(db)
    await enqueue(db, [job(f"j{i}") for i in range(6)])
    claimed = await claim(db, n=6)
    await record(db, claimed[:4], DOWN)
    assert await circuit(db) == ("closed", 4)
    await record(db, claimed[4:5], OK)
    assert await circuit(db) == ("closed", 0)
    await record(db, claimed[5:], DOWN)
    assert await circuit(db) == ("closed", 1)


async def test_a_retry_after_holds_the_handler_and_the_jobs_not_sent_keep_their_attempts(db: Database) -> None:
    await add_handler(db)
    await enqueue(db, [job(f"j{i}") for i in range(5)])
    [refused] = await claim(db, n=1)
    await record(db, [refused], held(30.0))
    assert await claim(db, n=10) == []
    rows = await sql(db, "SELECT attempt, count(*) FROM job_executions WHERE state = 'ENQUEUED' GROUP BY attempt "
                         "ORDER BY attempt")
    assert [tuple(r) for r in rows] == [(0, 4), (1, 1)]  # the refused call was an attempt; the others kept theirs
    [(ahead,)] = await sql(db, "SELECT retry_after - now() BETWEEN interval '29 s' AND interval '30 s' "
                               "FROM job_handler_flow")
    assert ahead
    await time_passes(db)
    assert len(await claim(db, n=10)) == 4  # the refused one waits for its own retry (Retry-After)


async def test_a_retry_after_of_a_keyed_job_holds_only_its_key(db: Database) -> None:
    await add_handler(db)
    await enqueue(db, [job(f"{k}{i}", concurrency_key=k) for k in "ab" for i in range(3)])
    [first] = await claim(db, n=1)
    await record(db, [first], held(30.0))
    taken = await claim(db, n=10)
    assert {c.concurrency_key for c in taken} == {"ab".replace(first.concurrency_key or "", "")}
    await time_passes(db)
    assert {c.concurrency_key for c in await claim(db, n=10)} == {first.concurrency_key}


async def test_an_adaptive_handlers_refusal_goes_back_with_its_attempt_and_halves_the_limit(db: Database) -> None:
    await add_handler(db, max_concurrency=16)
    await sql(db, "UPDATE job_handlers SET adaptive = true")
    await enqueue(db, [job(f"j{i}") for i in range(30)])
    claimed = await claim(db, n=30)
    assert len(claimed) == 4 and all(c.flow_watch for c in claimed)  # slow start: min(16, 4)
    await record(db, claimed[:1], SLOW_DOWN)
    [(state, attempt)] = await sql(db, "SELECT state, attempt FROM job_executions WHERE id = :id", id=claimed[0].id)
    assert (state, attempt) == ("ENQUEUED", 0)
    [(limit,)] = await sql(db, "SELECT adaptive_limit FROM job_handler_flow")
    assert limit == 2
    assert await claim(db, n=30) == []  # 3 in flight, limit 2
    await record(db, claimed[1:], OK)
    assert len(await claim(db, n=30)) == 2


async def test_twenty_refusals_in_a_row_then_the_next_is_a_failed_attempt(db: Database) -> None:
    await add_handler(db, max_concurrency=4)
    await sql(db, "UPDATE job_handlers SET adaptive = true")
    [job_id] = await enqueue(db, [job("j", max_attempts=2)])
    for _ in range(20):
        [c] = await claim(db, n=1)
        await record(db, [c], SLOW_DOWN)
    [(attempt,)] = await sql(db, "SELECT attempt FROM job_executions WHERE id = :id", id=job_id)
    assert attempt == 0
    [c] = await claim(db, n=1)
    await record(db, [c], SLOW_DOWN)
    [(state, attempt)] = await sql(db, "SELECT state, attempt FROM job_executions WHERE id = :id", id=job_id)
    assert (state, attempt) == ("ENQUEUED", 1)  # a failed attempt, retried
