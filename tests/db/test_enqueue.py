"""Enqueue inserts: defaults, no event row (DESIGN §8), batches, and idempotency keys under concurrency."""

from __future__ import annotations

import asyncio
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import asyncpg
import pytest
from sqlalchemy.engine import make_url

from app.db.database import Database
from tests.repositories import ShortcutRepository
from app.db.handlers import HandlerRepository
from app.domain.errors import DatabaseUnavailable, PayloadTooLarge, ValidationFailed
from app.domain.executions import NewJob
from app.domain.signing import new_handler_secret
from app.services.enqueue import EnqueueLimits, EnqueueService
from app.db.statements import fetch
from tests.conftest import scalar

repo = ShortcutRepository()

EVENT_KEYS = {"execution_id", "job_id", "job_type", "queue", "handler", "new_state", "attempt", "max_attempts",
              "error_type", "scheduled_at", "created_at", "started_at", "completed_at", "metadata"}


@pytest.fixture
async def service(db: Database) -> EnqueueService:
    async with db.transaction() as conn:
        await HandlerRepository().upsert(conn, name="h", url="http://127.0.0.1:9/h", timeout_seconds=None,
                                         max_concurrency=None, stateful=False, new_secret=new_handler_secret())
    return EnqueueService(db, EnqueueLimits(max_payload_bytes=1_048_576))


def keyed(key: str, payload: Any = None) -> NewJob:
    # The request fingerprint is computed by jobwire_enqueue in the database (revision 20261130_0002).
    return NewJob(handler="h", job_id=f"job-{key}", payload=payload, idempotency_key=key)


async def stored_events(db: Database, execution_id: uuid.UUID) -> list[dict[str, Any]]:
    async with db.transaction() as conn:
        rows = await fetch(conn, "SELECT event FROM job_events WHERE execution_id = :id ORDER BY id", id=execution_id)
        return [r[0] for r in rows]


async def test_execution_ids_are_version_7_and_ordered_by_the_millisecond_they_were_minted(
    db: Database, service: EnqueueService
) -> None:
    # Time-ordered ids keep index entries of new rows and row versions beside each other
    # (revision 20261130_0008); the column default, which a cron fire uses, is the same.
    first = await service.enqueue([NewJob(handler="h", job_id=None)])  # type: ignore[arg-type]
    await asyncio.sleep(0.005)
    batch = await service.enqueue([NewJob(handler="h", job_id=None) for _ in range(3)])  # type: ignore[arg-type]
    await asyncio.sleep(0.005)
    plain = await scalar(db, "INSERT INTO job_executions (job_id, job_type, handler, state) "
                             "VALUES ('direct', 'DELAYED', 'h', 'ENQUEUED') RETURNING id")
    ids = [first[0].execution.id, *(b.execution.id for b in batch), plain]
    assert {i.version for i in ids} == {7}
    assert ids[0] < min(ids[1:4]) and max(ids[1:4]) < ids[4]
    millis = [i.int >> 80 for i in ids]
    now_ms = int(datetime.now(UTC).timestamp() * 1000)
    assert all(now_ms - 60_000 < m <= now_ms + 1_000 for m in millis)  # the clock of a close server


async def test_insert_applies_the_defaults(db: Database, service: EnqueueService) -> None:
    [done] = await service.enqueue([NewJob(handler="h", job_id="report")])
    e = done.execution
    assert done.created
    assert (e.state, e.job_type, e.queue, e.attempt, e.max_attempts, e.priority) == (
        "ENQUEUED", "DELAYED", "default", 0, 5, 0)
    assert e.progress is None
    assert e.result is None and e.started_at is None and e.locked_by is None
    assert abs(e.scheduled_at - e.created_at) < timedelta(seconds=1)


async def test_insert_writes_no_event_and_the_first_event_has_the_curated_keys_only(
        db: Database, service: EnqueueService) -> None:
    [done] = await service.enqueue([NewJob(handler="h", job_id="report", payload={"p": 1},
                                           parameters={"q": 2}, metadata={"team": "x"})])
    # The insert needs no row of its own (DESIGN §8): the first is the job's first outcome or
    # action, here a cancel, and it names the job as the insert's row did.
    assert await stored_events(db, done.execution.id) == []
    async with db.transaction() as conn:
        assert await repo.cancel(conn, done.execution.id) is not None
    [event] = await stored_events(db, done.execution.id)
    assert set(event) == EVENT_KEYS
    assert not {"payload", "parameters", "result", "last_error"} & set(event)
    assert event["new_state"] == "CANCELLED" and event["attempt"] == 0
    assert event["execution_id"] == str(done.execution.id) and event["job_id"] == "report"
    assert event["metadata"] == {"team": "x"} and event["started_at"] is None


async def test_generated_job_id_defaults_to_the_execution_id(db: Database) -> None:
    async with db.transaction() as conn:
        await HandlerRepository().upsert(conn, name="h", url="http://x/", timeout_seconds=None,
                                         max_concurrency=None, stateful=False, new_secret=new_handler_secret())
        [e] = await repo.insert_many(conn, [NewJob(handler="h", job_id=None)])  # type: ignore[arg-type]
    assert e is not None and e.job_id == str(e.id)


async def test_absent_payload_is_sql_null_not_json_null(db: Database, service: EnqueueService) -> None:
    [done] = await service.enqueue([NewJob(handler="h", job_id="j")])
    assert await scalar(db, "SELECT payload IS NULL FROM job_executions WHERE id = :id", id=done.execution.id)


async def test_delay_and_run_at_set_scheduled_at_in_database_time(db: Database, service: EnqueueService) -> None:
    run_at = datetime(2030, 1, 2, 3, 4, 5, tzinfo=UTC)
    delayed, timed = await service.enqueue([NewJob(handler="h", job_id="a", delay_seconds=600.0),
                                            NewJob(handler="h", job_id="b", run_at=run_at)])
    delay = delayed.execution.scheduled_at - delayed.execution.created_at
    assert timedelta(seconds=599) < delay < timedelta(seconds=601)
    assert timed.execution.scheduled_at == run_at


async def test_batch_insert_keeps_item_order_and_writes_no_event(db: Database, service: EnqueueService) -> None:
    results = await service.enqueue([NewJob(handler="h", job_id=f"j{i}", priority=i) for i in range(50)])
    assert [r.execution.job_id for r in results] == [f"j{i}" for i in range(50)]
    assert await scalar(db, "SELECT count(*) FROM job_executions WHERE state = 'ENQUEUED'") == 50
    assert await scalar(db, "SELECT count(*) FROM job_events") == 0  # DESIGN §8: the insert writes none


async def test_a_batch_with_one_unknown_handler_inserts_nothing(db: Database, service: EnqueueService) -> None:
    with pytest.raises(ValidationFailed) as info:
        await service.enqueue([NewJob(handler="h", job_id="ok"), NewJob(handler="nope", job_id="bad")],
                              field_prefix="jobs")
    assert [e.field for e in info.value.errors] == ["jobs[1].handler"]
    assert await scalar(db, "SELECT count(*) FROM job_executions") == 0
    assert await scalar(db, "SELECT count(*) FROM job_events") == 0


async def test_an_oversized_job_is_refused_before_anything_is_written(db: Database) -> None:
    async with db.transaction() as conn:
        await HandlerRepository().upsert(conn, name="h", url="http://x/", timeout_seconds=None,
                                         max_concurrency=None, stateful=False, new_secret=new_handler_secret())
    small = EnqueueService(db, EnqueueLimits(max_payload_bytes=100))
    with pytest.raises(PayloadTooLarge):
        await small.enqueue([NewJob(handler="h", job_id="big", payload="x" * 200)])
    assert await scalar(db, "SELECT count(*) FROM job_executions") == 0


async def test_repeated_idempotency_key_returns_the_first_execution(db: Database, service: EnqueueService) -> None:
    [first] = await service.enqueue([keyed("order-1", {"n": 1})])
    [again] = await service.enqueue([keyed("order-1", {"n": 1})])
    assert first.created and not again.created
    assert again.execution.id == first.execution.id
    assert await scalar(db, "SELECT count(*) FROM job_executions") == 1
    assert await scalar(db, "SELECT count(*) FROM job_events") == 0  # neither the insert nor the replay wrote one


async def test_idempotency_key_with_a_different_body_is_refused(db: Database, service: EnqueueService) -> None:
    await service.enqueue([keyed("order-1", {"n": 1})])
    with pytest.raises(ValidationFailed):
        await service.enqueue([keyed("order-1", {"n": 2})])
    assert await scalar(db, "SELECT count(*) FROM job_executions") == 1


async def test_idempotency_key_repeated_within_one_batch_yields_one_execution(db: Database,
                                                                             service: EnqueueService) -> None:
    a, b = await service.enqueue([keyed("k", 1), keyed("k", 1)])
    assert a.created and not b.created and a.execution.id == b.execution.id
    assert await scalar(db, "SELECT count(*) FROM job_executions") == 1


async def test_concurrent_inserts_with_one_key_in_separate_transactions_yield_one_row(
        db: Database, service: EnqueueService) -> None:
    """The second insert waits on the unique index for the first transaction, then inserts nothing."""
    async with db.pool.acquire() as first, db.pool.acquire() as second:
        first_tx, second_tx = first.transaction(), second.transaction()
        await first_tx.start()
        await second_tx.start()
        [mine] = await repo.insert_many(first, [keyed("race")])
        assert mine is not None
        racing = asyncio.create_task(repo.insert_many(second, [keyed("race")]))
        await asyncio.sleep(0.2)
        assert not racing.done(), "the second insert should wait for the first transaction"
        await first_tx.commit()
        assert await asyncio.wait_for(racing, 10) == [None]
        # A new statement in READ COMMITTED sees the committed row.
        stored = await repo.by_idempotency_keys(second, ["race"])
        assert stored["race"][0].id == mine.id
        await second_tx.commit()
    assert await scalar(db, "SELECT count(*) FROM job_executions WHERE idempotency_key = 'race'") == 1
    assert await scalar(db, "SELECT count(*) FROM job_executions") == 1
    assert await scalar(db, "SELECT count(*) FROM job_events") == 0  # an insert writes no event row


async def test_second_insert_succeeds_when_the_first_transaction_rolls_back(db: Database,
                                                                           service: EnqueueService) -> None:
    async with db.pool.acquire() as first, db.pool.acquire() as second:
        first_tx, second_tx = first.transaction(), second.transaction()
        await first_tx.start()
        await second_tx.start()
        await repo.insert_many(first, [keyed("retry-me")])
        racing = asyncio.create_task(repo.insert_many(second, [keyed("retry-me")]))
        await asyncio.sleep(0.2)
        await first_tx.rollback()
        [winner] = await asyncio.wait_for(racing, 10)
        assert winner is not None
        await second_tx.commit()
    assert await scalar(db, "SELECT count(*) FROM job_executions WHERE idempotency_key = 'retry-me'") == 1


async def test_many_concurrent_enqueues_with_one_key_create_one_execution(db: Database,
                                                                          service: EnqueueService) -> None:
    results = await asyncio.gather(*(service.enqueue([keyed("burst", {"x": 1})]) for _ in range(8)))
    outcomes = [r for [r] in results]
    assert sum(r.created for r in outcomes) == 1
    assert len({r.execution.id for r in outcomes}) == 1
    assert await scalar(db, "SELECT count(*) FROM job_executions") == 1
    assert await scalar(db, "SELECT count(*) FROM job_events") == 0  # neither the insert nor the replay wrote one


async def test_concurrent_single_enqueues_share_statements_yet_each_refusal_is_its_own(
        db: Database, service: EnqueueService) -> None:
    # 30 calls at once: the first two run alone, the other 28 wait and share one statement,
    # which the unknown handlers among them make fail; each is then answered as if alone.
    jobs = [NewJob(handler="nope" if i % 5 == 0 else "h", job_id=f"j{i}") for i in range(30)]
    results = await asyncio.gather(*(service.enqueue([job]) for job in jobs), return_exceptions=True)
    for job, result in zip(jobs, results, strict=True):
        if job.handler == "nope":
            assert isinstance(result, ValidationFailed)
            assert [(e.field, e.message) for e in result.errors] == [
                ("handler", "no handler named 'nope' is registered")]
        else:
            assert not isinstance(result, BaseException), result
            [done] = result
            assert done.created and done.execution.job_id == job.job_id
    assert await scalar(db, "SELECT count(*) FROM job_executions") == 24
    assert await scalar(db, "SELECT count(*) FROM job_events") == 0  # an insert writes no event row


async def test_concurrent_single_enqueues_of_one_key_with_two_bodies_keep_one_and_refuse_the_other(
        db: Database, service: EnqueueService) -> None:
    calls = [keyed("contested", {"body": i % 2}) for i in range(12)]
    results = await asyncio.gather(*(service.enqueue([job]) for job in calls), return_exceptions=True)
    [stored] = {r[0].execution.id for r in results if not isinstance(r, BaseException)}
    kept = await scalar(db, "SELECT payload FROM job_executions WHERE id = :id", id=stored)
    for job, result in zip(calls, results, strict=True):
        if job.payload == kept:
            assert not isinstance(result, BaseException), result
            assert result[0].execution.id == stored
        else:
            assert isinstance(result, ValidationFailed) and result.errors[0].field == "idempotency_key"
    assert sum(1 for r in results if not isinstance(r, BaseException) and r[0].created) == 1
    assert await scalar(db, "SELECT count(*) FROM job_executions") == 1


async def test_an_enqueue_on_connections_the_server_dropped_is_at_worst_unavailable_once_then_recovers(
        db: Database, service: EnqueueService, database_url: str) -> None:
    # Pooled connections whose backends the server terminated: the pool notices most of them
    # before handing them out; one it hands out anyway is worded DatabaseUnavailable (a 503, never
    # a 500) and replaced, with every pooled one opened before it.
    async def hold(_: int) -> None:
        async with db.transaction() as conn:
            await conn.execute("SELECT pg_sleep(0.05)")

    await asyncio.gather(*(hold(i) for i in range(4)))  # four pooled connections
    admin = await asyncpg.connect(make_url(database_url).set(drivername="postgresql")
                                  .render_as_string(hide_password=False))
    try:
        dropped = await admin.fetchval("SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                                       "WHERE datname = current_database() AND pid <> pg_backend_pid() "
                                       "AND backend_type = 'client backend'")
    finally:
        await admin.close()
    assert dropped >= 4
    try:
        await service.enqueue([NewJob(handler="h", job_id="first")])
    except DatabaseUnavailable:
        pass
    [done] = await service.enqueue([NewJob(handler="h", job_id="after")])
    assert done.created
    assert await scalar(db, "SELECT count(*) FROM job_executions WHERE job_id = 'after'") == 1
