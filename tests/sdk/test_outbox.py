"""jobwire.outbox: jobs enqueued in the application's own transaction, on its own asyncpg or
psycopg 3 connection, through the same `jobwire_enqueue` the API uses. A committed job is run by
the live server; a rolled back one never existed; a refusal is a ProblemError naming the field."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import UUID, uuid4

import asyncpg
import psycopg
import pytest
from sqlalchemy.engine import make_url

import jobwire
from jobwire import ProblemError, outbox
from tests.sdk.conftest import Live

Enqueue = Callable[..., Awaitable[Any]]


def plain_dsn(url: str) -> str:
    return make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)


@pytest.fixture
async def sdk(live: Live) -> AsyncIterator[jobwire.AsyncJobwireClient]:
    async with jobwire.AsyncJobwireClient(live.url) as client:
        yield client


@pytest.fixture
async def orders(database_url: str, db) -> AsyncIterator[None]:
    """The application's own table, beside Jobwire's."""
    conn = await asyncpg.connect(plain_dsn(database_url))
    try:
        await conn.execute("CREATE TABLE IF NOT EXISTS sdk_orders (id int PRIMARY KEY)")
        await conn.execute("TRUNCATE sdk_orders")
        yield
        await conn.execute("DROP TABLE sdk_orders")
    finally:
        await conn.close()


@pytest.fixture(params=["asyncpg", "psycopg", "psycopg-async"])
async def in_transaction(request: pytest.FixtureRequest, database_url: str) -> Any:
    """`await in_transaction(work, commit=True)`: runs `work(conn, insert)` in one transaction on
    a connection of the driver under test, where `await insert(sql)` runs a statement and
    `await enqueue(...)` calls outbox.enqueue (or enqueue_many); commits or rolls back."""
    dsn = plain_dsn(database_url)

    async def on_asyncpg(work: Callable[[Any], Awaitable[Any]], commit: bool) -> Any:
        conn = await asyncpg.connect(dsn)
        try:
            transaction = conn.transaction()
            await transaction.start()
            try:
                result = await work(Driver(conn, asynchronous=True))
            finally:
                await (transaction.commit() if commit else transaction.rollback())
            return result
        finally:
            await conn.close()

    async def on_psycopg_async(work: Callable[[Any], Awaitable[Any]], commit: bool) -> Any:
        async with await psycopg.AsyncConnection.connect(dsn) as conn:
            try:
                return await work(Driver(conn, asynchronous=True))
            finally:
                await (conn.commit() if commit else conn.rollback())

    async def on_psycopg(work: Callable[[Any], Awaitable[Any]], commit: bool) -> Any:
        conn = await asyncio.to_thread(psycopg.connect, dsn)
        try:
            return await work(Driver(conn, asynchronous=False))
        finally:
            await asyncio.to_thread(conn.commit if commit else conn.rollback)
            await asyncio.to_thread(conn.close)

    runners = {"asyncpg": on_asyncpg, "psycopg": on_psycopg, "psycopg-async": on_psycopg_async}

    async def run(work: Callable[[Any], Awaitable[Any]], commit: bool = True) -> Any:
        return await runners[request.param](work, commit)

    return run


class Driver:
    """One connection and the outbox's functions on it, awaited whichever kind it is (a sync
    psycopg connection's calls run in a worker thread: the live server shares this event loop)."""

    def __init__(self, conn: Any, *, asynchronous: bool) -> None:
        self.conn = conn
        self.asynchronous = asynchronous

    async def _call(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        if self.asynchronous:
            return await fn(*args, **kwargs)
        return await asyncio.to_thread(fn, *args, **kwargs)

    async def execute(self, sql: str) -> None:
        await self._call(self.conn.execute, sql)

    async def enqueue(self, *args: Any, **kwargs: Any) -> outbox.EnqueuedJob:
        return await self._call(outbox.enqueue, self.conn, *args, **kwargs)

    async def enqueue_many(self, *args: Any, **kwargs: Any) -> list[outbox.EnqueuedJob]:
        return await self._call(outbox.enqueue_many, self.conn, *args, **kwargs)


async def test_a_committed_job_is_run_by_the_server(orders, in_transaction, sdk):
    async def work(driver: Driver) -> outbox.EnqueuedJob:
        await driver.execute("INSERT INTO sdk_orders (id) VALUES (42)")
        return await driver.enqueue("echo", {"order": 42}, idempotency_key="receipt-42")

    job = await in_transaction(work)
    assert isinstance(job.id, UUID) and job.created and job.ord == 0 and job.state == "ENQUEUED"
    assert job.job_id == str(job.id) and job.scheduled_at.tzinfo is not None
    done = await sdk.executions.wait(job.id, timeout=10)
    assert done.state == "SUCCEEDED" and done.result == {"order": 42}


async def test_a_rolled_back_job_never_existed(orders, in_transaction, sdk):
    async def work(driver: Driver) -> outbox.EnqueuedJob:
        await driver.execute("INSERT INTO sdk_orders (id) VALUES (43)")
        return await driver.enqueue("echo", {"order": 43}, queue="rolled-back")

    job = await in_transaction(work, commit=False)
    with pytest.raises(ProblemError) as missing:
        await sdk.executions.get(job.id)
    assert missing.value.status == 404
    assert [e async for e in sdk.executions.list(queue="rolled-back")] == []


async def test_enqueue_many_keeps_the_order_and_a_repeated_key_returns_the_first_execution(
        live, in_transaction, sdk):
    run_at = datetime.now(UTC) + timedelta(hours=1)
    ref = uuid4()

    async def work(driver: Driver) -> list[outbox.EnqueuedJob]:
        first = await driver.enqueue_many([
            {"handler": "echo", "payload": {"ref": ref}, "run_at": run_at, "job_id": "later"},
            {"handler": "echo", "payload": {"i": 1}, "idempotency_key": "once", "queue": None},
        ])
        again = await driver.enqueue("echo", {"i": 1}, idempotency_key="once")
        return [*first, again]

    later, once, again = await in_transaction(work)
    assert (later.ord, once.ord, again.ord) == (0, 1, 0)
    assert later.job_id == "later" and abs(later.scheduled_at - run_at) < timedelta(milliseconds=1)
    assert (await sdk.executions.get(later.id)).payload == {"ref": str(ref)}
    assert again.id == once.id and again.created is False


async def test_a_refused_job_raises_problem_error_naming_the_field(live, in_transaction):
    async def work(driver: Driver) -> Any:
        return await driver.enqueue_many([{"handler": "echo"}, {"handler": "echo", "priority": 2**40}])

    with pytest.raises(ProblemError) as refused:
        await in_transaction(work, commit=False)
    assert refused.value.status == 422 and refused.value.fields == ["jobs[1].priority"]
    assert refused.value.detail.startswith("jobwire_enqueue: jobs[1].priority")
    assert refused.value.__cause__ is not None  # the driver's own error, kept


async def test_a_job_enqueued_in_a_transaction_carries_its_concurrency_key(live, in_transaction, sdk):
    async def work(driver: Driver) -> outbox.EnqueuedJob:
        return await driver.enqueue("echo", {"n": 1}, concurrency_key="customer:42", delay_seconds=3600)

    job = await in_transaction(work)
    assert (await sdk.executions.get(job.id)).concurrency_key == "customer:42"
    assert [(k.key, k.waiting) async for k in sdk.handlers.keys("echo")] == [("customer:42", 1)]

    async def refused(driver: Driver) -> Any:
        return await driver.enqueue_many([{"handler": "echo", "concurrency_key": "has space"}])

    with pytest.raises(ProblemError) as bad:
        await in_transaction(refused, commit=False)
    assert bad.value.status == 422 and bad.value.fields == ["jobs[0].concurrency_key"]

async def test_the_schema_option_qualifies_the_function(live, in_transaction):
    async def work(driver: Driver) -> outbox.EnqueuedJob:
        return await driver.enqueue("echo", schema="public")

    assert (await in_transaction(work)).created
    assert outbox.function_name('we"ird') == '"we""ird".jobwire_enqueue'


def test_another_kind_of_connection_is_refused_by_name():
    with pytest.raises(TypeError, match="asyncpg or psycopg 3 connection, not object"):
        outbox.enqueue(object(), "echo")
