"""Enqueues that race for the same rows: batches naming the same idempotency keys never deadlock,
a transaction that loses to a concurrent one is run again a bounded number of times (then 503),
and an unreachable database fails a group of enqueues at once."""

from __future__ import annotations

import asyncio
import socket
from typing import Any

import asyncpg
import httpx
import orjson
import pytest
from sqlalchemy.engine import make_url

from app.db.database import Database
from app.db.connection import DatabaseConfig
from app.db.handlers import HandlerRepository
from app.domain.errors import DatabaseContention, DatabaseUnavailable
from app.domain.executions import NewJob
from app.domain.signing import new_handler_secret
from app.services.enqueue import EnqueueLimits, EnqueueService
from app.db.statements import fetchval
from tests.conftest import PROBLEM, register


async def add_handler(db: Database, name: str = "h") -> None:
    async with db.transaction() as conn:
        await HandlerRepository().upsert(conn, name=name, url="http://127.0.0.1:9/h", timeout_seconds=None,
                                         max_concurrency=None, stateful=False, new_secret=new_handler_secret())


def dsn(url: str) -> str:
    return make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)


async def test_two_batches_naming_the_same_keys_in_opposite_orders_never_deadlock(
        db: Database, database_url: str) -> None:
    """Straight through jobwire_enqueue, as an application calls it (no retry in between): each
    call inserts in key order, so the second waits for the first's keys instead of holding one
    the first waits for. Both name the same executions."""
    await add_handler(db)
    keys = [f"key-{i:03d}" for i in range(200)]
    forward = orjson.dumps([{"handler": "h", "payload": {"k": k}, "idempotency_key": k} for k in keys]).decode()
    backward = orjson.dumps([{"handler": "h", "payload": {"k": k}, "idempotency_key": k}
                             for k in reversed(keys)]).decode()
    first, second = await asyncpg.connect(dsn(database_url)), await asyncpg.connect(dsn(database_url))
    try:
        for round_ in range(5):
            async with db.transaction() as conn:
                await conn.execute("TRUNCATE job_events, job_executions CASCADE")

            async def enqueue(conn: asyncpg.Connection, jobs: str) -> dict[str, Any]:
                async with conn.transaction():
                    rows = await conn.fetch("SELECT idempotency_key, id FROM jobwire_enqueue($1::jsonb)", jobs)
                    await asyncio.sleep(0.05)  # hold the keys a moment: the other call is under way
                return {r["idempotency_key"]: r["id"] for r in rows}

            a, b = await asyncio.gather(enqueue(first, forward), enqueue(second, backward))
            assert a == b, f"round {round_}: the two batches name different executions"
            assert len(a) == 200
    finally:
        await first.close()
        await second.close()


async def test_keyed_batches_racing_through_the_api_all_succeed_with_the_same_executions(api, handler) -> None:
    await register(api, "h", handler.url)
    keys = [f"k{i:03d}" for i in range(100)]

    async def batch(order: list[str]) -> dict[str, str]:
        response = await api.post("/v1/jobs/batch", json={"jobs": [
            {"handler": "h", "payload": {"k": k}, "idempotency_key": k} for k in order]})
        assert response.status_code in (200, 201), response.text
        return {item["job_id"]: item["id"] for item in response.json()["items"]} or {}

    results = await asyncio.gather(*(batch(keys if i % 2 else keys[::-1]) for i in range(8)))
    assert all(r == results[0] for r in results)
    assert len(results[0]) == 100


CONTENDED = """
CREATE SEQUENCE IF NOT EXISTS contended_tries;
CREATE OR REPLACE FUNCTION contended() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    -- nextval is not rolled back: it counts every try, the failed ones included.
    IF NEW.handler = 'contended' AND nextval('contended_tries') <= {fail_times} THEN
        RAISE EXCEPTION 'a concurrent transaction won' USING ERRCODE = '{sqlstate}';
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER contended BEFORE INSERT ON job_executions FOR EACH ROW EXECUTE FUNCTION contended();
"""


@pytest.fixture
async def contended(db: Database) -> Any:
    """Installs a trigger that makes an insert for handler 'contended' fail with a real
    serialization failure (or deadlock) its first `fail_times` tries; returns how many tries."""

    async def install(fail_times: int, sqlstate: str = "40001") -> None:
        async with db.transaction() as conn:
            await conn.execute("DROP TRIGGER IF EXISTS contended ON job_executions")
            await conn.execute("DROP SEQUENCE IF EXISTS contended_tries")
            for statement in CONTENDED.format(fail_times=fail_times, sqlstate=sqlstate).split(";\nCREATE"):
                await conn.execute(statement if statement.startswith("\n") else "CREATE" + statement)

    async def tries() -> int:
        async with db.transaction() as conn:
            return await fetchval(conn, "SELECT last_value FROM contended_tries")

    install.tries = tries  # type: ignore[attr-defined]
    yield install
    async with db.transaction() as conn:
        await conn.execute("DROP TRIGGER IF EXISTS contended ON job_executions")
        await conn.execute("DROP FUNCTION IF EXISTS contended()")
        await conn.execute("DROP SEQUENCE IF EXISTS contended_tries")


async def test_an_enqueue_that_loses_to_concurrent_transactions_is_tried_again(db: Database, contended) -> None:
    await add_handler(db, "contended")
    await contended(fail_times=2, sqlstate="40P01")
    service = EnqueueService(db, EnqueueLimits(max_payload_bytes=1_048_576))
    [done] = await service.enqueue([NewJob(handler="contended", job_id="j", idempotency_key="once")])
    assert done.created and await contended.tries() == 3


async def test_an_enqueue_that_keeps_losing_answers_503_with_retry_after_and_writes_nothing(
        api, handler, db: Database, contended) -> None:
    await register(api, "contended", handler.url)
    await contended(fail_times=1000)
    response = await api.post("/v1/jobs", json={"handler": "contended", "payload": {"x": 1}})
    assert response.status_code == 503, response.text
    assert response.headers["content-type"] == PROBLEM
    assert response.headers["retry-after"] == "1"
    assert "send it again" in response.json()["detail"]
    assert await contended.tries() == 4  # bounded: the first try and three more
    async with db.transaction() as conn:
        assert await fetchval(conn, "SELECT count(*) FROM job_executions") == 0

    batch = await api.post("/v1/jobs/batch", json={"jobs": [{"handler": "contended"}, {"handler": "contended"}]})
    assert batch.status_code == 503 and batch.headers["retry-after"] == "1"


async def test_a_group_of_enqueues_fails_at_once_when_the_database_is_unreachable() -> None:
    """A server that accepts connections and closes them at once stands in for a database that
    went away; it counts connection attempts. The first caller runs alone, the nine that arrived
    meanwhile share one statement: that fails for all nine, with no statement per item after it."""
    attempts = 0

    async def refuse(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal attempts
        attempts += 1
        writer.close()

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = await asyncio.start_server(refuse, "127.0.0.1", port)
    db = await Database.open(DatabaseConfig(url=f"postgresql://jobwire@127.0.0.1:{port}/gone", pool_timeout=5))
    service = EnqueueService(db, EnqueueLimits(max_payload_bytes=1_048_576))
    try:
        outcomes = await asyncio.gather(*(service.enqueue([NewJob(handler="h", job_id=f"j{i}")]) for i in range(10)),
                                        return_exceptions=True)
    finally:
        await db.close()
        server.close()
        await server.wait_closed()
    assert all(isinstance(o, DatabaseUnavailable) for o in outcomes), outcomes
    assert attempts == 2, f"{attempts} connection attempts for one lone statement and one group"


async def test_contention_is_its_own_error_not_an_outage(db: Database) -> None:
    with pytest.raises(DatabaseContention):
        async with db.transaction() as conn:
            await conn.execute(
                "DO $$ BEGIN RAISE EXCEPTION 'lost' USING ERRCODE = 'serialization_failure'; END $$")
    with pytest.raises(DatabaseContention):
        async with db.autocommit() as conn:
            await conn.execute(
                "DO $$ BEGIN RAISE EXCEPTION 'lost' USING ERRCODE = 'deadlock_detected'; END $$")


_ = httpx
