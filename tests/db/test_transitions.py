"""Guarded transitions through ExecutionRepository: who may win, retries in one statement, and
exactly one event per committed state change, written in the same transaction."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from app.db.database import Connection, Database
from tests.repositories import ShortcutRepository
from app.db.statements import execute, fetch, fetchval
from app.db.handlers import HandlerRepository
from app.domain.executions import Execution, NewJob
from app.domain.signing import new_handler_secret
from app.domain.states import JobState
from app.services.enqueue import EnqueueLimits, EnqueueService

repo = ShortcutRepository()
S = JobState

EVENT_KEYS = {"execution_id", "job_id", "job_type", "queue", "handler", "new_state", "attempt", "max_attempts",
              "error_type", "scheduled_at", "created_at", "started_at", "completed_at", "metadata"}


@pytest.fixture
async def handler(db: Database) -> str:
    async with db.transaction() as conn:
        await HandlerRepository().upsert(conn, name="h", url="http://127.0.0.1:9/h", timeout_seconds=None,
                                         max_concurrency=None, stateful=False, new_secret=new_handler_secret())
    return "h"


async def enqueued(db: Database, **kw: Any) -> uuid.UUID:
    service = EnqueueService(db, EnqueueLimits(max_payload_bytes=1_048_576))
    [done] = await service.enqueue([NewJob(handler="h", job_id="j", payload={"secret": "p"},
                                           parameters={"p": 1}, metadata={"m": 1}, **kw)])
    return done.execution.id


async def processing(db: Database, *, cron: bool = False, **kw: Any) -> uuid.UUID:
    execution_id = await enqueued(db, **kw)
    if cron:
        async with db.transaction() as conn:
            await execute(conn, "UPDATE job_executions SET job_type = 'CRON', fire_at = now() WHERE id = :id",
                          id=execution_id)
    async with db.transaction() as conn:
        [claimed] = await repo.claim(conn, "node-1", 1, [], default_timeout=60.0)
    assert claimed.id == execution_id
    return execution_id


async def get(db: Database, execution_id: uuid.UUID) -> Execution:
    async with db.transaction() as conn:
        execution = await repo.get(conn, execution_id)
    assert execution is not None
    return execution


async def events(db: Database, execution_id: uuid.UUID, conn: Connection | None = None) -> list[dict[str, Any]]:
    sql = "SELECT event FROM job_events WHERE execution_id = :id ORDER BY id"
    if conn is not None:
        return [r[0] for r in await fetch(conn, sql, id=execution_id)]
    async with db.transaction() as own:
        return [r[0] for r in await fetch(own, sql, id=execution_id)]


def trail(evs: list[dict[str, Any]]) -> list[tuple[str, int]]:
    return [(e["new_state"], e["attempt"]) for e in evs]


async def fail(db: Database, execution_id: uuid.UUID, attempt: int, *, cause: JobState = S.FAILED,
               error_type: str = "http_status", retryable: bool = True, delay: float = 0.0) -> Execution | None:
    async with db.transaction() as conn:
        return await repo.fail(conn, execution_id, attempt, cause=cause, error="HTTP 500: boom",
                               error_type=error_type, retryable=retryable, delay=delay)


async def succeed(db: Database, execution_id: uuid.UUID, attempt: int, result: Any = None) -> list[Execution]:
    async with db.transaction() as conn:
        return await repo.succeed_many(conn, [(execution_id, attempt, result)], db.notify_channel)


async def cancel(db: Database, execution_id: uuid.UUID) -> Execution | None:
    async with db.transaction() as conn:
        return await repo.cancel(conn, execution_id)


async def retry(db: Database, execution_id: uuid.UUID) -> Execution | None:
    async with db.transaction() as conn:
        return await repo.retry_manually(conn, execution_id)


# --- success ---------------------------------------------------------------------------------

async def test_success_for_the_current_attempt_stores_the_result(db: Database, handler: str) -> None:
    execution_id = await processing(db)
    [done] = await succeed(db, execution_id, 0, {"answer": 42})
    assert done.state == S.SUCCEEDED and done.result == {"answer": 42}
    assert done.completed_at is not None and done.locked_by is None
    # The insert and the claim write no event row (DESIGN §8): the outcome is the first.
    assert trail(await events(db, execution_id)) == [("SUCCEEDED", 0)]


@pytest.mark.parametrize("other_attempt", [0, 2])
async def test_success_for_another_attempt_changes_nothing(db: Database, handler: str, other_attempt: int) -> None:
    execution_id = await processing(db)
    await fail(db, execution_id, 0)  # now ENQUEUED, attempt 1
    async with db.transaction() as conn:
        [_] = await repo.claim(conn, "node-1", 1, [], default_timeout=60.0)  # PROCESSING, attempt 1
    assert await succeed(db, execution_id, other_attempt) == []
    assert (await get(db, execution_id)).state == S.PROCESSING
    assert trail(await events(db, execution_id))[-1] == ("ENQUEUED", 1)


async def test_success_of_an_enqueued_execution_changes_nothing(db: Database, handler: str) -> None:
    execution_id = await enqueued(db)
    assert await succeed(db, execution_id, 0) == []
    assert (await get(db, execution_id)).state == S.ENQUEUED


async def test_duplicate_success_changes_nothing(db: Database, handler: str) -> None:
    execution_id = await processing(db)
    await succeed(db, execution_id, 0, "first")
    assert await succeed(db, execution_id, 0, "second") == []
    assert (await get(db, execution_id)).result == "first"
    assert len(await events(db, execution_id)) == 1


async def test_late_success_wins_over_abandoned(db: Database, handler: str) -> None:
    execution_id = await processing(db, cron=True)
    abandoned = await fail(db, execution_id, 0, cause=S.ABANDONED, error_type="abandoned_deadline")
    assert abandoned is not None and abandoned.state == S.ABANDONED  # a CRON attempt stays ABANDONED
    [done] = await succeed(db, execution_id, 0, "late")
    assert done.state == S.SUCCEEDED and done.result == "late"
    assert trail(await events(db, execution_id))[-2:] == [("ABANDONED", 0), ("SUCCEEDED", 0)]


@pytest.mark.parametrize("error_type", ["abandoned_deadline", "abandoned_node", "abandoned_shutdown"])
async def test_late_success_wins_over_dead_letter_reached_by_abandoning(db: Database, handler: str,
                                                                       error_type: str) -> None:
    execution_id = await processing(db, max_attempts=1)
    dead = await fail(db, execution_id, 0, cause=S.ABANDONED, error_type=error_type)
    assert dead is not None and dead.state == S.DEAD_LETTER and dead.error_type == error_type
    assert trail(await events(db, execution_id))[-2:] == [("ABANDONED", 0), ("DEAD_LETTER", 0)]
    [done] = await succeed(db, execution_id, 0, {"ok": True})
    assert done.state == S.SUCCEEDED


@pytest.mark.parametrize("error_type", ["http_status", "connection", "handler_failed", "abandonedx"])
async def test_late_success_never_overrides_dead_letter_from_a_failure(db: Database, handler: str,
                                                                       error_type: str) -> None:
    execution_id = await processing(db, max_attempts=1)
    await fail(db, execution_id, 0, cause=S.FAILED, error_type=error_type)
    assert await succeed(db, execution_id, 0) == []
    assert (await get(db, execution_id)).state == S.DEAD_LETTER


async def test_late_success_never_overrides_a_users_cancel(db: Database, handler: str) -> None:
    execution_id = await processing(db)
    assert (await cancel(db, execution_id)) is not None
    assert await succeed(db, execution_id, 0, "late") == []
    execution = await get(db, execution_id)
    assert execution.state == S.CANCELLED and execution.result is None


# --- failure and retry -----------------------------------------------------------------------

async def test_failure_with_attempts_left_re_enqueues_the_next_attempt_in_one_statement(db: Database,
                                                                                        handler: str) -> None:
    execution_id = await processing(db, max_attempts=3)
    after = await fail(db, execution_id, 0, delay=0.0)
    assert after is not None
    assert (after.state, after.attempt, after.max_attempts) == (S.ENQUEUED, 1, 3)
    assert after.error_type == "http_status" and after.last_error == "HTTP 500: boom"
    assert after.locked_by is None and after.completed_at is None
    assert trail(await events(db, execution_id)) == [("FAILED", 0), ("ENQUEUED", 1)]


async def test_retry_delay_keeps_the_next_attempt_unclaimable_until_due(db: Database, handler: str) -> None:
    execution_id = await processing(db)
    after = await fail(db, execution_id, 0, delay=600.0)
    assert after is not None
    assert after.scheduled_at > datetime.now(UTC) + timedelta(seconds=500)
    async with db.transaction() as conn:
        assert await repo.claim(conn, "node-1", 10, [], default_timeout=60.0) == []


async def test_failure_with_attempts_spent_dead_letters_with_failed_then_dead_letter_events(
        db: Database, handler: str) -> None:
    execution_id = await processing(db, max_attempts=2)
    await fail(db, execution_id, 0)
    async with db.transaction() as conn:
        [claimed] = await repo.claim(conn, "node-1", 1, [], default_timeout=60.0)
    assert claimed.attempt == 1
    dead = await fail(db, execution_id, 1)
    assert dead is not None
    assert (dead.state, dead.attempt) == (S.DEAD_LETTER, 1)
    assert dead.completed_at is not None and dead.locked_by is None
    assert trail(await events(db, execution_id))[-2:] == [("FAILED", 1), ("DEAD_LETTER", 1)]


async def test_non_retryable_failure_dead_letters_at_once(db: Database, handler: str) -> None:
    execution_id = await processing(db, max_attempts=5)
    dead = await fail(db, execution_id, 0, retryable=False, error_type="handler_failed")
    assert dead is not None and (dead.state, dead.attempt) == (S.DEAD_LETTER, 0)
    assert trail(await events(db, execution_id))[-2:] == [("FAILED", 0), ("DEAD_LETTER", 0)]


async def test_abandoned_delayed_attempt_with_attempts_left_re_enqueues(db: Database, handler: str) -> None:
    execution_id = await processing(db, max_attempts=3)
    after = await fail(db, execution_id, 0, cause=S.ABANDONED, error_type="abandoned_node")
    assert after is not None and (after.state, after.attempt) == (S.ENQUEUED, 1)
    assert trail(await events(db, execution_id))[-2:] == [("ABANDONED", 0), ("ENQUEUED", 1)]


async def test_abandoned_cron_attempt_writes_one_event(db: Database, handler: str) -> None:
    execution_id = await processing(db, cron=True)
    await fail(db, execution_id, 0, cause=S.ABANDONED, error_type="abandoned_deadline")
    assert trail(await events(db, execution_id)) == [("ABANDONED", 0)]


async def test_an_abandonment_at_the_deadline_applies_only_once_the_deadline_has_passed(db: Database,
                                                                                        handler: str) -> None:
    """A stale timer (the deadline of the claim, since moved by a heartbeat) abandons nothing."""
    execution_id = await processing(db)  # deadline: 60 s from the claim
    async with db.transaction() as conn:
        early = await repo.fail(conn, execution_id, 0, cause=S.ABANDONED, error="no reply by the deadline",
                                error_type="abandoned_deadline", retryable=True, delay=0.0, at_deadline=True)
    assert early is None and (await get(db, execution_id)).state is S.PROCESSING
    async with db.transaction() as conn:
        await execute(conn, "UPDATE job_executions SET deadline_at = now() - interval '1 ms' WHERE id = :id",
                      id=execution_id)
        due = await repo.fail(conn, execution_id, 0, cause=S.ABANDONED, error="no reply by the deadline",
                              error_type="abandoned_deadline", retryable=True, delay=0.0, at_deadline=True)
    assert due is not None and (due.state, due.attempt) == (S.ENQUEUED, 1)


async def test_failure_for_a_stale_attempt_changes_nothing(db: Database, handler: str) -> None:
    execution_id = await processing(db)
    assert await fail(db, execution_id, 1) is None
    assert (await get(db, execution_id)).state == S.PROCESSING
    assert await events(db, execution_id) == []


@pytest.mark.parametrize("state_setup", ["enqueued", "succeeded", "cancelled"])
async def test_failure_outside_processing_changes_nothing(db: Database, handler: str, state_setup: str) -> None:
    if state_setup == "enqueued":
        execution_id = await enqueued(db)
    else:
        execution_id = await processing(db)
        if state_setup == "succeeded":
            await succeed(db, execution_id, 0)
        else:
            await cancel(db, execution_id)
    before = await get(db, execution_id)
    count = len(await events(db, execution_id))
    assert await fail(db, execution_id, 0) is None
    assert await fail(db, execution_id, 0, cause=S.ABANDONED, error_type="abandoned_node") is None
    assert (await get(db, execution_id)).state == before.state
    assert len(await events(db, execution_id)) == count


# --- cancel ----------------------------------------------------------------------------------

async def test_cancel_of_an_enqueued_execution(db: Database, handler: str) -> None:
    execution_id = await enqueued(db)
    done = await cancel(db, execution_id)
    assert done is not None and done.state == S.CANCELLED and done.completed_at is not None
    assert trail(await events(db, execution_id)) == [("CANCELLED", 0)]


async def test_cancel_of_a_processing_execution_releases_its_lock(db: Database, handler: str) -> None:
    execution_id = await processing(db)
    done = await cancel(db, execution_id)
    assert done is not None and done.state == S.CANCELLED and done.locked_by is None


@pytest.mark.parametrize("final", ["SUCCEEDED", "DEAD_LETTER", "CANCELLED"])
async def test_cancel_from_any_other_state_changes_nothing(db: Database, handler: str, final: str) -> None:
    execution_id = await processing(db, max_attempts=1)
    if final == "SUCCEEDED":
        await succeed(db, execution_id, 0)
    elif final == "DEAD_LETTER":
        await fail(db, execution_id, 0)
    else:
        await cancel(db, execution_id)
    count = len(await events(db, execution_id))
    assert await cancel(db, execution_id) is None
    assert (await get(db, execution_id)).state == final
    assert len(await events(db, execution_id)) == count


async def test_cancel_of_an_abandoned_cron_attempt_changes_nothing(db: Database, handler: str) -> None:
    execution_id = await processing(db, cron=True)
    await fail(db, execution_id, 0, cause=S.ABANDONED, error_type="abandoned_deadline")
    assert await cancel(db, execution_id) is None
    assert (await get(db, execution_id)).state == S.ABANDONED


# --- manual retry ----------------------------------------------------------------------------

async def test_manual_retry_of_a_spent_dead_letter_starts_a_new_attempt_and_raises_max_attempts(
        db: Database, handler: str) -> None:
    execution_id = await processing(db, max_attempts=1)
    await fail(db, execution_id, 0)
    again = await retry(db, execution_id)
    assert again is not None
    assert (again.state, again.attempt, again.max_attempts) == (S.ENQUEUED, 1, 2)
    assert again.started_at is None and again.completed_at is None and again.deadline_at is None
    assert again.scheduled_at <= datetime.now(UTC) + timedelta(seconds=5)
    assert trail(await events(db, execution_id))[-1] == ("ENQUEUED", 1)
    async with db.transaction() as conn:
        [claimed] = await repo.claim(conn, "node-1", 1, [], default_timeout=60.0)
    assert (claimed.id, claimed.attempt) == (execution_id, 1)


async def test_manual_retry_of_a_cancelled_execution_keeps_max_attempts_when_attempts_remain(
        db: Database, handler: str) -> None:
    execution_id = await enqueued(db, max_attempts=5)
    await cancel(db, execution_id)
    again = await retry(db, execution_id)
    assert again is not None and (again.state, again.attempt, again.max_attempts) == (S.ENQUEUED, 1, 5)
    assert trail(await events(db, execution_id)) == [("CANCELLED", 0), ("ENQUEUED", 1)]


@pytest.mark.parametrize("current", ["ENQUEUED", "PROCESSING", "SUCCEEDED"])
async def test_manual_retry_from_any_other_state_changes_nothing(db: Database, handler: str, current: str) -> None:
    execution_id = await enqueued(db) if current == "ENQUEUED" else await processing(db)
    if current == "SUCCEEDED":
        await succeed(db, execution_id, 0)
    count = len(await events(db, execution_id))
    assert await retry(db, execution_id) is None
    assert (await get(db, execution_id)).state == current
    assert len(await events(db, execution_id)) == count


# --- handing over to the handler (202) -------------------------------------------------------

async def test_release_to_handler_clears_the_lock_only_for_the_holding_node(db: Database, handler: str) -> None:
    execution_id = await processing(db)
    async with db.transaction() as conn:
        assert await repo.release_to_handler(conn, "other-node", [(execution_id, 0)]) == []
        assert await repo.release_to_handler(conn, "node-1", [(execution_id, 1)]) == []
        assert await repo.release_to_handler(conn, "node-1", [(execution_id, 0)]) == [execution_id]
    execution = await get(db, execution_id)
    assert execution.state == S.PROCESSING and execution.locked_by is None
    assert await events(db, execution_id) == []  # not a state change (nor did the claim write one)


# --- events: one per change, same transaction, curated shape ----------------------------------

class Rollback(Exception):
    pass


Operation = Callable[[Connection, uuid.UUID], Awaitable[Any]]


async def test_a_claim_whose_reply_was_lost_returns_to_enqueued_with_the_same_attempt(db: Database,
                                                                                      handler: str) -> None:
    """The node reconciles after a claim failed mid-flight: rows it holds but never dispatched go
    back to ENQUEUED at the same attempt (nothing ran, so no attempt is spent); the one it is
    working on stays; a CRON fire keeps its instant and runs."""
    from app.domain.retry import RetryPolicy
    from app.services.outcomes import ClaimConfig, OutcomeService

    lost = await enqueued(db, max_attempts=1)
    working = await enqueued(db)
    fire = await enqueued(db)
    async with db.transaction() as conn:
        await execute(conn, "UPDATE job_executions SET job_type = 'CRON', fire_at = now() - interval '1 s', "
                                "fire_node = '' WHERE id = :id", id=fire)
        claimed = await repo.claim(conn, "node-1", 10, [], default_timeout=60.0)
    assert {c.id for c in claimed} == {lost, working, fire}
    fire_at = (await get(db, fire)).scheduled_at

    service = OutcomeService(db, RetryPolicy(), ClaimConfig("node-1", (), 60.0))
    assert await service.release_untracked([working]) == 2

    for execution_id in (lost, fire):
        back = await get(db, execution_id)
        assert (back.state, back.attempt, back.locked_by, back.started_at, back.deadline_at) == (
            S.ENQUEUED, 0, None, None, None)
        assert trail(await events(db, execution_id)) == [("ENQUEUED", 0)]
    assert (await get(db, fire)).scheduled_at == fire_at
    assert (await get(db, working)).state is S.PROCESSING
    # A max_attempts of 1 is not spent: the lost claim is claimed and run as attempt 0.
    async with db.transaction() as conn:
        again = await repo.claim(conn, "node-2", 10, [], default_timeout=60.0)
    assert sorted((c.id, c.attempt) for c in again) == sorted([(lost, 0), (fire, 0)])
    # Another node's rows, and rows of this node already past PROCESSING, are left alone.
    assert await service.release_untracked([]) == 1  # `working`: node-1 still holds it
    assert (await get(db, lost)).locked_by == "node-2"


async def op_claim(conn: Connection, _: uuid.UUID) -> Any:
    return await repo.claim(conn, "node-1", 1, [], default_timeout=60.0)


async def op_succeed(conn: Connection, i: uuid.UUID) -> Any:
    return await repo.succeed_many(conn, [(i, 0, "r")], "jobwire_default_enqueued")


async def op_fail(conn: Connection, i: uuid.UUID) -> Any:
    return await repo.fail(conn, i, 0, cause=S.FAILED, error="e", error_type="http_status", retryable=True, delay=0)


async def op_cancel(conn: Connection, i: uuid.UUID) -> Any:
    return await repo.cancel(conn, i)


async def op_retry(conn: Connection, i: uuid.UUID) -> Any:
    return await repo.retry_manually(conn, i)


async def setup_enqueued(db: Database) -> uuid.UUID:
    return await enqueued(db)


async def setup_processing(db: Database) -> uuid.UUID:
    return await processing(db, max_attempts=3)


async def setup_cancelled(db: Database) -> uuid.UUID:
    execution_id = await enqueued(db)
    await cancel(db, execution_id)
    return execution_id


CASES = {
    "claim": (setup_enqueued, op_claim, 0),  # no row of its own (DESIGN §8)
    "succeed": (setup_processing, op_succeed, 1),
    "fail_and_retry": (setup_processing, op_fail, 2),
    "cancel": (setup_enqueued, op_cancel, 1),
    "manual_retry": (setup_cancelled, op_retry, 1),
}


@pytest.mark.parametrize("case", sorted(CASES))
async def test_each_transition_writes_its_events_in_its_own_transaction(db: Database, handler: str,
                                                                        case: str) -> None:
    setup, operation, written = CASES[case]
    execution_id = await setup(db)
    before = await events(db, execution_id)
    async with db.transaction() as conn:
        assert await operation(conn, execution_id)
        inside = await events(db, execution_id, conn)
    assert len(inside) == len(before) + written
    assert await events(db, execution_id) == inside


@pytest.mark.parametrize("case", sorted(CASES))
async def test_a_rolled_back_transition_leaves_neither_change_nor_event(db: Database, handler: str,
                                                                        case: str) -> None:
    setup, operation, written = CASES[case]
    execution_id = await setup(db)
    before_state = (await get(db, execution_id)).state
    before = await events(db, execution_id)
    with pytest.raises(Rollback):
        async with db.transaction() as conn:
            assert await operation(conn, execution_id)
            assert len(await events(db, execution_id, conn)) == len(before) + written
            raise Rollback
    assert (await get(db, execution_id)).state == before_state
    assert await events(db, execution_id) == before


async def test_every_event_has_exactly_the_curated_keys(db: Database, handler: str) -> None:
    succeeded = await processing(db)
    await succeed(db, succeeded, 0, {"result": "hidden"})
    cancelled = await enqueued(db)
    await cancel(db, cancelled)
    retried = await processing(db, max_attempts=2)
    await fail(db, retried, 0)
    async with db.transaction() as conn:
        await repo.claim(conn, "node-1", 1, [], default_timeout=60.0)
    await fail(db, retried, 1)
    await retry(db, retried)

    seen = set()
    for execution_id in (retried, succeeded, cancelled):
        for event in await events(db, execution_id):
            assert set(event) == EVENT_KEYS, event
            assert event["execution_id"] == str(execution_id)
            assert event["metadata"] == {"m": 1}
            seen.add(event["new_state"])
    assert seen == {"ENQUEUED", "FAILED", "DEAD_LETTER", "SUCCEEDED", "CANCELLED"}


async def test_event_records_the_state_and_attempt_it_describes(db: Database, handler: str) -> None:
    execution_id = await processing(db, max_attempts=3)
    await fail(db, execution_id, 0, error_type="connection")
    failed, requeued = (await events(db, execution_id))[-2:]
    assert (failed["new_state"], failed["attempt"], failed["error_type"]) == ("FAILED", 0, "connection")
    assert (requeued["new_state"], requeued["attempt"], requeued["max_attempts"]) == ("ENQUEUED", 1, 3)
    assert failed["job_id"] == "j" and failed["job_type"] == "DELAYED" and failed["queue"] == "default"
    assert failed["handler"] == "h"
    assert datetime.fromisoformat(failed["created_at"]).tzinfo is not None


async def successes(db: Database, items: list[tuple[uuid.UUID, int]]) -> None:
    async with db.transaction() as conn:
        await repo.succeed_many(conn, [(i, a, {"ok": True}) for i, a in items], db.notify_channel)


async def releases(db: Database, items: list[tuple[uuid.UUID, int]]) -> None:
    async with db.transaction() as conn:
        await repo.release_to_handler(conn, "node-1", items)


async def test_batches_over_the_same_rows_in_opposite_orders_wait_instead_of_deadlocking(
        db: Database, handler: str) -> None:
    # A group of completion callbacks and the dispatcher's release of 202s may name the same
    # rows at once, each in its own order: both lock their rows in id order, so one waits.
    service = EnqueueService(db, EnqueueLimits(max_payload_bytes=1_048_576))
    for n in range(5):
        await service.enqueue([NewJob(handler="h", job_id=f"r{n}-{i}") for i in range(200)], field_prefix="jobs")
        async with db.transaction() as conn:
            claimed = await repo.claim(conn, "node-1", 200, [], default_timeout=60.0)
        items = [(job.id, job.attempt) for job in claimed]
        # Both batches at once, each on its own connection, in opposite orders; a deadlock raises here.
        await asyncio.gather(successes(db, items), releases(db, list(reversed(items))))
    async with db.transaction() as conn:
        states = dict(await fetch(conn, "SELECT state, count(*) FROM job_executions GROUP BY state"))
        succeeded = await fetchval(conn, "SELECT count(*) FROM job_events WHERE event->>'new_state' = 'SUCCEEDED'")
    assert states == {"SUCCEEDED": 1000} and succeeded == 1000
