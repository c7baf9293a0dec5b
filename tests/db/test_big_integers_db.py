"""Numbers arrive as sent, in the database: jobwire_enqueue (the SQL path applications call)
stores an integer beyond 64 bits exactly, and Jobwire reads it back exactly (its pool's jsonb
codec), in a transaction and on an autocommit connection alike."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import asyncpg
import orjson
import pytest
from sqlalchemy.engine import make_url

from jobwire import outbox
from app.db.database import Database
from app.db.executions import ExecutionRepository
from app.db.handlers import HandlerRepository
from app.db.statements import fetchrow
from app.domain.executions import NewJob
from app.domain.jsontext import dumps, loads
from app.domain.signing import new_handler_secret

BIG = 123456789012345678901234567890
JOB = (f'{{"handler": "h", "run_at": "2999-01-01T00:00:00Z", "payload": {{"n": {BIG}, "l": [{-BIG}, {2**64}]}}, '
       f'"parameters": {{"p": {-(2**63) - 1}}}, "metadata": {{"m": {BIG}}}}}')


@pytest.fixture
async def conn(db: Database, database_url: str) -> AsyncIterator[asyncpg.Connection]:
    """A plain asyncpg connection, as an application has; handler h registered."""
    async with db.transaction() as c:
        await HandlerRepository().upsert(c, name="h", url="http://127.0.0.1:9/", timeout_seconds=None,
                                         max_concurrency=None, stateful=False, new_secret=new_handler_secret())
    connection = await asyncpg.connect(make_url(database_url).set(drivername="postgresql")
                                       .render_as_string(hide_password=False))
    yield connection
    await connection.close()


async def test_an_integer_beyond_64_bits_enqueued_in_sql_is_stored_exactly(conn: asyncpg.Connection,
                                                                             db: Database) -> None:
    async with conn.transaction():
        [row] = await conn.fetch("SELECT id FROM jobwire_enqueue($1::jsonb)", f"[{JOB}]")
    stored = await conn.fetchrow("SELECT payload::text, parameters::text, metadata::text FROM job_executions")
    assert json.loads(stored["payload"]) == {"n": BIG, "l": [-BIG, 2**64]}
    assert f"{BIG}" in stored["payload"] and f"{-BIG}" in stored["payload"]
    assert stored["parameters"] == f'{{"p": {-(2**63) - 1}}}'
    assert stored["metadata"] == f'{{"m": {BIG}}}'
    # The insert writes no event row (DESIGN §8); the first event, here a cancel's, copies the
    # metadata from the row exactly.
    assert await conn.fetchval("SELECT count(*) FROM job_events") == 0
    async with db.transaction() as c:
        assert await ExecutionRepository().cancel(c, row["id"]) is not None
    event = await conn.fetchval("SELECT event::text FROM job_events WHERE execution_id = $1", row["id"])
    assert f'"metadata": {{"m": {BIG}}}' in event


async def test_jobwire_reads_an_integer_beyond_64_bits_back_exactly_either_way(
        conn: asyncpg.Connection, db: Database) -> None:
    async with conn.transaction():
        [row] = await conn.fetch("SELECT id FROM jobwire_enqueue($1::jsonb)", f"[{JOB}]")
    async with db.transaction() as c:
        read = await ExecutionRepository().get(c, row["id"])
    async with db.autocommit() as c:  # the enqueue's own rows, the read values written back
        [(again, created)] = await ExecutionRepository().enqueue(c, [NewJob(
            handler="h", job_id="again", payload=read.payload, parameters=read.parameters, metadata=read.metadata)])
    assert created
    for execution in (read, again):
        assert isinstance(execution.payload["n"], orjson.Fragment)
        assert orjson.dumps(execution.payload) == f'{{"l":[{-BIG},{2**64}],"n":{BIG}}}'.encode()
        assert orjson.dumps(execution.parameters) == f'{{"p":{-(2**63) - 1}}}'.encode()
        assert orjson.dumps(execution.metadata) == f'{{"m":{BIG}}}'.encode()


async def test_an_integer_beyond_64_bits_is_bound_as_jsonb_exactly(db: Database) -> None:
    value = {"fragment": loads(str(BIG)), "python": 2**70}
    async with db.transaction() as c:  # parameters go as JSON text (the statements CAST them)
        row = await fetchrow(c, "SELECT CAST(CAST(:v AS jsonb) AS text) AS as_text, CAST(:v AS jsonb) AS back",
                             v=dumps(value).decode())
    assert row["as_text"] == f'{{"python": {2**70}, "fragment": {BIG}}}'
    assert orjson.dumps(row["back"]) == f'{{"python":{2**70},"fragment":{BIG}}}'.encode()


async def test_a_python_int_beyond_64_bits_is_enqueued_exactly_through_the_sdk_outbox(
        conn: asyncpg.Connection) -> None:
    async with conn.transaction():
        await outbox.enqueue(conn, "h", {"n": BIG}, metadata={"m": -BIG})
    stored = await conn.fetchrow("SELECT payload::text, metadata::text FROM job_executions")
    assert (stored["payload"], stored["metadata"]) == (f'{{"n": {BIG}}}', f'{{"m": {-BIG}}}')
