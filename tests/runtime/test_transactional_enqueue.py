"""Transactional enqueue (the outbox pattern): an application sharing Jobwire's database calls
jobwire_enqueue on its own connection, plain SQLAlchemy or plain asyncpg. The job commits or
rolls back with the business data, and a running server, woken by the NOTIFY the commit
delivers, dispatches it (the servers here poll only every 30 s)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import asyncpg
import httpx
import pytest
from aiohttp import web
from sqlalchemy import text
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import create_async_engine

from jobwire import outbox
from app.db.migrate import upgrade_sync
from tests.conftest import HandlerServer, register, settings_for, start_server, wait_for_state

ENQUEUE_SQL = "SELECT ord, created, id, job_id, state FROM jobwire_enqueue(CAST(:jobs AS jsonb)) ORDER BY ord"
ENQUEUE_ASYNCPG = "SELECT ord, created, id, job_id, state FROM jobwire_enqueue($1::jsonb) ORDER BY ord"


def plain_dsn(url: str) -> str:
    return make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)


def sqlalchemy_url(url: str) -> str:
    return make_url(url).set(drivername="postgresql+asyncpg").render_as_string(hide_password=False)


@pytest.fixture
async def orders(database_url: str, db) -> AsyncIterator[str]:
    """The application's own table, beside Jobwire's."""
    conn = await asyncpg.connect(plain_dsn(database_url))
    try:
        await conn.execute("CREATE TABLE IF NOT EXISTS shop_orders (id int PRIMARY KEY, total numeric)")
        await conn.execute("TRUNCATE shop_orders")
        yield "shop_orders"
        await conn.execute("DROP TABLE shop_orders")
    finally:
        await conn.close()


async def count(database_url: str, sql: str, *args: Any) -> int:
    conn = await asyncpg.connect(plain_dsn(database_url))
    try:
        return await conn.fetchval(sql, *args)
    finally:
        await conn.close()


async def reply_ok(_: web.Request, job: dict[str, Any]) -> web.StreamResponse:
    return web.json_response({"result": {"order": job["payload"]["order"]}})


@pytest.fixture
async def api(jobwire: Callable[..., Awaitable[Any]], handler: HandlerServer) -> AsyncIterator[httpx.AsyncClient]:
    """A running server (API and dispatcher) with the handler `receipts`, idle: its next poll is
    30 s away, so only a NOTIFY makes it claim within the tests' few seconds."""
    server = await jobwire(poll_interval=30.0)
    async with httpx.AsyncClient(base_url=server.url, timeout=10) as client:
        await register(client, "receipts", handler.route("/receipts", reply_ok))
        await asyncio.sleep(0.3)
        yield client


# --- plain SQLAlchemy ----------------------------------------------------------------------

async def test_sqlalchemy_rolled_back_with_the_business_data_leaves_no_job_and_no_event(
        database_url, orders, api, handler):
    engine = create_async_engine(sqlalchemy_url(database_url))
    try:
        async with engine.connect() as conn:
            async with conn.begin() as tx:
                await conn.execute(text("INSERT INTO shop_orders (id, total) VALUES (1, 9.5)"))
                rows = (await conn.execute(text(ENQUEUE_SQL), {"jobs": json.dumps(
                    [{"handler": "receipts", "payload": {"order": 1}}])})).mappings().all()
                assert [(r["ord"], r["created"], r["state"]) for r in rows] == [(0, True, "ENQUEUED")]
                await tx.rollback()
    finally:
        await engine.dispose()
    await asyncio.sleep(0.5)
    assert handler.received == []
    assert await count(database_url, "SELECT count(*) FROM shop_orders") == 0
    assert await count(database_url, "SELECT count(*) FROM job_executions") == 0
    assert await count(database_url, "SELECT count(*) FROM job_events") == 0


async def test_sqlalchemy_commit_delivers_the_job_woken_by_notify(database_url, orders, api, handler):
    engine = create_async_engine(sqlalchemy_url(database_url))
    try:
        async with engine.begin() as conn:
            await conn.execute(text("INSERT INTO shop_orders (id, total) VALUES (2, 10)"))
            [row] = (await conn.execute(text(ENQUEUE_SQL), {"jobs": json.dumps(
                [{"handler": "receipts", "payload": {"order": 2}}])})).mappings().all()
            await asyncio.sleep(0.5)
            assert handler.received == [], "nothing is dispatched before the commit"
    finally:
        await engine.dispose()
    await handler.wait_for(1, timeout=5)
    done = await wait_for_state(api, str(row["id"]), "SUCCEEDED", timeout=5)
    assert done["result"] == {"order": 2} and done["job_id"] == str(row["id"])
    assert await count(database_url, "SELECT count(*) FROM shop_orders") == 1


# --- plain asyncpg ---------------------------------------------------------------------------

async def test_asyncpg_rolled_back_with_the_business_data_leaves_no_job_and_no_event(
        database_url, orders, api, handler):
    conn = await asyncpg.connect(plain_dsn(database_url))
    try:
        tx = conn.transaction()
        await tx.start()
        await conn.execute("INSERT INTO shop_orders (id, total) VALUES (3, 1)")
        rows = await conn.fetch(ENQUEUE_ASYNCPG, json.dumps([{"handler": "receipts", "payload": {"order": 3}},
                                                            {"handler": "receipts", "payload": {"order": 3}}]))
        assert [(r["ord"], r["created"]) for r in rows] == [(0, True), (1, True)]
        await tx.rollback()
    finally:
        await conn.close()
    await asyncio.sleep(0.5)
    assert handler.received == []
    assert await count(database_url, "SELECT count(*) FROM shop_orders") == 0
    assert await count(database_url, "SELECT count(*) FROM job_executions") == 0
    assert await count(database_url, "SELECT count(*) FROM job_events") == 0


async def test_asyncpg_commit_delivers_the_job_woken_by_notify(database_url, orders, api, handler):
    conn = await asyncpg.connect(plain_dsn(database_url))
    try:
        async with conn.transaction():
            await conn.execute("INSERT INTO shop_orders (id, total) VALUES (4, 1)")
            [row] = await conn.fetch(ENQUEUE_ASYNCPG, json.dumps([{"handler": "receipts", "payload": {"order": 4}}]))
            await asyncio.sleep(0.5)
            assert handler.received == [], "nothing is dispatched before the commit"
    finally:
        await conn.close()
    await handler.wait_for(1, timeout=5)
    done = await wait_for_state(api, str(row["id"]), "SUCCEEDED", timeout=5)
    assert done["result"] == {"order": 4}


# --- a schema of its own, called from a connection whose search_path is elsewhere -------------

async def test_in_a_schema_the_function_reaches_its_tables_and_wakes_that_schemas_nodes(
        fresh_database, handler):
    url = await fresh_database()
    await asyncio.to_thread(upgrade_sync, url, "jw_outbox")
    server = await start_server(settings_for(url, db_schema="jw_outbox", poll_interval=30.0))
    try:
        async with httpx.AsyncClient(base_url=server.url, timeout=10) as api:
            await register(api, "receipts", handler.route("/receipts", reply_ok))
            await asyncio.sleep(0.3)
            conn = await asyncpg.connect(plain_dsn(url), server_settings={"search_path": "public"})
            try:
                # Decoys on the caller's search_path: an unpinned function would find these instead.
                await conn.execute("CREATE TABLE job_handlers (name text, stateful bool)")
                await conn.execute("CREATE TABLE job_executions (id uuid)")
                async with conn.transaction():
                    job = await outbox.enqueue(conn, "receipts", {"order": 7}, schema="jw_outbox")
                unqualified = conn.fetch(ENQUEUE_ASYNCPG, "[]")
                with pytest.raises(asyncpg.UndefinedFunctionError):
                    await unqualified  # not on this search_path: call it schema-qualified
            finally:
                await conn.close()
            await handler.wait_for(1, timeout=5)
            await wait_for_state(api, str(job.id), "SUCCEEDED", timeout=5)
    finally:
        await server.stop()
