"""jobwire_enqueue(jobs jsonb), the one insert path of the API and of applications: its rows,
defaults, events (none for the insert: DESIGN §8) and idempotency fingerprints are those of an
API enqueue, and it refuses bad input with a clear error naming every field at fault (SQLSTATE
22023, DETAIL as JSON)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Any

import asyncpg
import pytest
from sqlalchemy.engine import make_url

from app.db.database import Database
from app.db.executions import ExecutionRepository
from app.db.handlers import HandlerRepository
from app.db.queues import QueueRepository
from app.domain.errors import ValidationFailed
from app.domain.executions import NewJob
from app.domain.signing import new_handler_secret
from app.services.enqueue import EnqueueLimits, EnqueueService

TRACE = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
COMPARED = ("job_type", "handler", "queue", "state", "attempt", "max_attempts", "priority", "stateful", "payload",
            "parameters", "metadata", "result", "progress", "timeout_seconds", "max_duration_seconds",
            "idempotency_key", "request_hash", "fire_node", "started_at", "completed_at", "deadline_at",
            "locked_by", "last_error", "error_type")


@pytest.fixture
async def conn(db: Database, database_url: str) -> AsyncIterator[asyncpg.Connection]:
    """A plain asyncpg connection, as an application has; handlers h and s (stateful) registered."""
    async with db.transaction() as c:
        for name, stateful in (("h", False), ("s", True)):
            await HandlerRepository().upsert(c, name=name, url="http://127.0.0.1:9/", timeout_seconds=None,
                                             max_concurrency=None, stateful=stateful, new_secret=new_handler_secret())
    connection = await asyncpg.connect(make_url(database_url).set(drivername="postgresql")
                                       .render_as_string(hide_password=False))
    yield connection
    await connection.close()


async def enqueue(conn: asyncpg.Connection, *jobs: Any) -> list[asyncpg.Record]:
    return await conn.fetch("SELECT * FROM jobwire_enqueue($1::jsonb) ORDER BY ord", json.dumps(list(jobs)))


async def refusal(conn: asyncpg.Connection, *jobs: Any) -> asyncpg.InvalidParameterValueError:
    with pytest.raises(asyncpg.InvalidParameterValueError) as info:
        await enqueue(conn, *jobs)
    assert info.value.constraint_name == "jobwire_enqueue"
    assert await conn.fetchval("SELECT count(*) FROM job_executions") == 0
    assert await conn.fetchval("SELECT count(*) FROM job_events") == 0
    return info.value


def fields(error: asyncpg.InvalidParameterValueError) -> list[str]:
    return [e["field"] for e in json.loads(error.detail)]


# --- the same rows as the API's path ------------------------------------------------------------

async def test_a_job_enqueued_in_sql_is_the_row_and_event_the_api_path_writes(conn, db: Database) -> None:
    job = {"handler": "h", "job_id": "report-7", "queue": "reports", "priority": 3, "payload": {"p": [1, "é"]},
           "parameters": {"q": 2}, "metadata": {"team": "x"}, "max_attempts": 7, "timeout_seconds": 30,
           "max_duration_seconds": 600, "idempotency_key": "report-7-v1", "delay_seconds": 60}
    [sql_row] = await enqueue(conn, job)
    await conn.execute("UPDATE job_executions SET idempotency_key = 'moved' WHERE id = $1", sql_row["id"])
    [api] = await EnqueueService(db, EnqueueLimits(1 << 20)).enqueue([NewJob(
        handler="h", job_id="report-7", queue="reports", priority=3, payload={"p": [1, "é"]}, parameters={"q": 2},
        metadata={"team": "x"}, max_attempts=7, timeout_seconds=30.0, max_duration_seconds=600.0,
        idempotency_key="report-7-v1", delay_seconds=60.0)])
    rows = {r["id"]: r for r in await conn.fetch("SELECT * FROM job_executions")}
    mine, theirs = rows[sql_row["id"]], rows[api.execution.id]
    compared = [c for c in COMPARED if c != "idempotency_key"]  # moved aside so that both could insert
    assert {c: mine[c] for c in compared} == {c: theirs[c] for c in compared}
    assert mine["request_hash"] is not None  # the same fingerprint: a key works across both paths
    assert abs(mine["scheduled_at"] - mine["created_at"]).total_seconds() == pytest.approx(60, abs=1)
    # Neither path writes an event row for the insert (DESIGN §8); the first event of each, here a
    # cancel of both in one transaction, is the same but for the job's own ids and times.
    assert await conn.fetchval("SELECT count(*) FROM job_events") == 0
    async with db.transaction() as c:
        for execution_id in (sql_row["id"], api.execution.id):
            assert await ExecutionRepository().cancel(c, execution_id) is not None
    first, second = (json.loads(e["event"]) for e in await conn.fetch(
        "SELECT event FROM job_events ORDER BY array_position($1::uuid[], execution_id)",
        [sql_row["id"], api.execution.id]))
    assert first.keys() == second.keys()
    same = {k for k in first if k not in ("execution_id", "job_id", "created_at", "scheduled_at")}
    assert {k: first[k] for k in same} == {k: second[k] for k in same}
    assert first["new_state"] == "CANCELLED" and first["job_id"] == "report-7"
    assert first["execution_id"] == str(sql_row["id"]) and second["execution_id"] == str(api.execution.id)


async def test_an_idempotency_key_stored_through_sql_answers_the_api_with_the_same_execution(conn, db) -> None:
    [row] = await enqueue(conn, {"handler": "h", "payload": {"n": 1}, "idempotency_key": "order-9",
                                 "run_at": "2999-01-01T01:00:00+01:00"})
    service = EnqueueService(db, EnqueueLimits(1 << 20))
    [again] = await service.enqueue([NewJob(handler="h", job_id=None, payload={"n": 1},  # type: ignore[arg-type]
                                            idempotency_key="order-9", run_at=datetime(2999, 1, 1, tzinfo=UTC))])
    assert not again.created and again.execution.id == row["id"]
    with pytest.raises(ValidationFailed) as info:
        await service.enqueue([NewJob(handler="h", job_id=None, payload={"n": 2},  # type: ignore[arg-type]
                                      idempotency_key="order-9")])
    assert [e.field for e in info.value.errors] == ["idempotency_key"]


async def test_defaults_apply_and_absent_or_null_fields_are_the_same(conn) -> None:
    bare, nulls = await enqueue(conn, {"handler": "h"}, {
        "handler": "h", "job_id": None, "queue": None, "priority": None, "payload": None, "run_at": None,
        "delay_seconds": None, "max_attempts": None, "stateful": None, "metadata": None, "traceparent": None})
    for row in (bare, nulls):
        assert (row["created"], row["job_type"], row["state"], row["queue"], row["priority"], row["attempt"],
                row["max_attempts"], row["stateful"]) == (True, "DELAYED", "ENQUEUED", "default", 0, 0, 5, False)
        assert row["job_id"] == str(row["id"])
        assert row["payload"] is None and row["metadata"] is None  # SQL NULL, not a JSON null
        assert row["progress"] is None
    assert await conn.fetchval("SELECT count(*) FROM job_executions WHERE payload IS NULL") == 2


async def test_one_row_per_item_in_order_and_a_key_repeated_in_the_array_is_one_execution(conn) -> None:
    rows = await enqueue(conn, {"handler": "h", "idempotency_key": "k", "payload": 1}, {"handler": "h"},
                         {"handler": "h", "idempotency_key": "k", "payload": 1})
    assert [(r["ord"], r["created"]) for r in rows] == [(0, True), (1, True), (2, False)]
    assert rows[0]["id"] == rows[2]["id"] != rows[1]["id"]
    [again] = await enqueue(conn, {"handler": "h", "idempotency_key": "k", "payload": 1})
    assert (again["created"], again["id"]) == (False, rows[0]["id"])
    assert await conn.fetchval("SELECT count(*) FROM job_executions") == 2
    assert await conn.fetchval("SELECT count(*) FROM job_events") == 0  # an insert writes no event row


async def test_a_stateful_handler_makes_the_job_stateful(conn) -> None:
    [row] = await enqueue(conn, {"handler": "s"})
    assert row["stateful"] is True


async def test_an_empty_array_enqueues_nothing(conn) -> None:
    assert await enqueue(conn) == []


@pytest.mark.parametrize(("metadata", "stored"), [
    pytest.param(None, {"context": {"traceparent": TRACE}}, id="no-metadata"),
    pytest.param({"team": "x"}, {"team": "x", "context": {"traceparent": TRACE}}, id="metadata-without-context"),
    pytest.param({"context": {"user": 1}}, {"context": {"user": 1, "traceparent": TRACE}}, id="context-kept"),
    pytest.param({"context": {"traceparent": "mine"}}, {"context": {"traceparent": "mine"}}, id="body-wins"),
    pytest.param({"context": "opaque"}, {"context": "opaque"}, id="context-not-an-object-wins"),
])
async def test_a_traceparent_lands_in_metadata_context_unless_the_metadata_sets_one(
        conn, metadata: Any, stored: Any) -> None:
    [row] = await enqueue(conn, {"handler": "h", "metadata": metadata, "traceparent": TRACE})
    assert json.loads(row["metadata"]) == stored


async def test_the_traceparent_is_not_part_of_the_fingerprint(conn) -> None:
    [first] = await enqueue(conn, {"handler": "h", "idempotency_key": "t", "traceparent": TRACE})
    [second] = await enqueue(conn, {"handler": "h", "idempotency_key": "t",
                                    "traceparent": TRACE.replace("00f067aa", "11f067aa")})
    assert (second["created"], second["id"]) == (False, first["id"])


# --- refusals ------------------------------------------------------------------------------

@pytest.mark.parametrize(("job", "field", "words"), [
    pytest.param({"handler": "nope"}, "jobs[0].handler", "no handler named 'nope' is registered", id="unknown-handler"),
    pytest.param({}, "jobs[0].handler", "field required", id="handler-missing"),
    pytest.param({"handler": "h", "job_id": "has space"}, "jobs[0].job_id", "must be a string matching",
                 id="job-id-pattern"),
    pytest.param({"handler": "h", "job_id": "j" * 256}, "jobs[0].job_id", "must be a string matching",
                 id="job-id-256-chars"),
    pytest.param({"handler": "h", "queue": ""}, "jobs[0].queue", "must be a string matching", id="queue-empty"),
    pytest.param({"handler": "h", "queue": 5}, "jobs[0].queue", "must be a string matching", id="queue-number"),
    pytest.param({"handler": "h", "idempotency_key": "a/b"}, "jobs[0].idempotency_key", "must be a string matching",
                 id="key-pattern"),
    pytest.param({"handler": "h", "priority": 2**31}, "jobs[0].priority", "integer from -2147483648 to 2147483647",
                 id="priority-above-int32"),
    pytest.param({"handler": "h", "priority": 5.5}, "jobs[0].priority", "integer", id="priority-fraction"),
    pytest.param({"handler": "h", "priority": "5"}, "jobs[0].priority", "integer", id="priority-string"),
    pytest.param({"handler": "h", "max_attempts": 0}, "jobs[0].max_attempts", "from 1 to 1000", id="attempts-0"),
    pytest.param({"handler": "h", "max_attempts": 1001}, "jobs[0].max_attempts", "from 1 to 1000",
                 id="attempts-1001"),
    pytest.param({"handler": "h", "timeout_seconds": 0}, "jobs[0].timeout_seconds", "greater than 0",
                 id="timeout-zero"),
    pytest.param({"handler": "h", "timeout_seconds": 604801}, "jobs[0].timeout_seconds", "at most 604800",
                 id="timeout-over-7-days"),
    pytest.param({"handler": "h", "max_duration_seconds": -1}, "jobs[0].max_duration_seconds", "greater than 0",
                 id="max-duration-negative"),
    pytest.param({"handler": "h", "timeout_seconds": "5"}, "jobs[0].timeout_seconds", "a number of seconds",
                 id="timeout-string"),
    pytest.param({"handler": "h", "delay_seconds": -1}, "jobs[0].delay_seconds", "at least 0", id="delay-negative"),
    pytest.param({"handler": "h", "delay_seconds": 5, "run_at": "2030-01-01T00:00:00Z"}, "jobs[0].delay_seconds",
                 "give run_at or delay_seconds, not both", id="run-at-and-delay"),
    pytest.param({"handler": "h", "run_at": "2030-01-01T00:00:00"}, "jobs[0].run_at", "with a time zone",
                 id="run-at-without-zone"),
    pytest.param({"handler": "h", "run_at": "2030-02-30T00:00:00Z"}, "jobs[0].run_at", "RFC 3339",
                 id="run-at-not-a-date"),
    pytest.param({"handler": "h", "run_at": "0001-01-01T00:00:00+01:00"}, "jobs[0].run_at", "years 1-9999",
                 id="run-at-before-year-1-in-utc"),
    pytest.param({"handler": "h", "run_at": 1893456000}, "jobs[0].run_at", "RFC 3339", id="run-at-number"),
    pytest.param({"handler": "h", "stateful": "yes"}, "jobs[0].stateful", "true or false", id="stateful-string"),
    pytest.param({"handler": "h", "parameters": [1]}, "jobs[0].parameters", "JSON object", id="parameters-list"),
    pytest.param({"handler": "h", "metadata": "x"}, "jobs[0].metadata", "JSON object", id="metadata-string"),
    pytest.param({"handler": "h", "traceparent": "00-" + "0" * 32 + "-00f067aa0ba902b7-01"}, "jobs[0].traceparent",
                 "W3C traceparent", id="traceparent-zero-trace-id"),
    pytest.param({"handler": "h", "colour": "red"}, "jobs[0].colour", "unknown field", id="unknown-field"),
    pytest.param({"handler": "h", "id": "00000000-0000-4000-8000-000000000000"}, "jobs[0].id", "unknown field",
                 id="ids-are-not-chosen-by-callers"),
    pytest.param([1], "jobs[0]", "must be a JSON object", id="item-not-an-object"),
])
async def test_bad_input_is_refused_naming_the_field_and_nothing_is_stored(
        conn, job: Any, field: str, words: str) -> None:
    error = await refusal(conn, job)
    assert field in fields(error)
    assert str(error).startswith(f"jobwire_enqueue: {field}: ") or field in str(error)
    assert words in error.detail


async def test_every_fault_of_every_item_is_listed_and_one_bad_item_refuses_all(conn) -> None:
    error = await refusal(conn, {"handler": "h"}, {"handler": "h", "priority": "high", "max_attempts": 0},
                          {"handler": "nope"})
    # Field checks first: the handler check runs only once every item is well formed.
    assert fields(error) == ["jobs[1].priority", "jobs[1].max_attempts"]
    assert str(error).startswith("jobwire_enqueue: jobs[1].priority: must be an integer")
    assert "(and 1 more)" in str(error)
    error = await refusal(conn, {"handler": "h"}, {"handler": "nope"}, {"handler": "gone"})
    assert fields(error) == ["jobs[1].handler", "jobs[2].handler"]


async def test_an_idempotency_key_reused_with_another_body_is_refused(conn) -> None:
    await enqueue(conn, {"handler": "h", "idempotency_key": "k", "payload": 1})
    with pytest.raises(asyncpg.InvalidParameterValueError) as info:
        await enqueue(conn, {"handler": "h"}, {"handler": "h", "idempotency_key": "k", "payload": 2})
    assert fields(info.value) == ["jobs[1].idempotency_key"]
    assert "was used with a different request body" in str(info.value)
    assert await conn.fetchval("SELECT count(*) FROM job_executions") == 1


@pytest.mark.parametrize("argument", ["{}", "null", "5"])
async def test_an_argument_that_is_not_an_array_is_refused(conn, argument: str) -> None:
    with pytest.raises(asyncpg.InvalidParameterValueError, match="jobs must be a JSON array"):
        await conn.fetch("SELECT * FROM jobwire_enqueue($1::jsonb)", argument)


async def wakes_dispatchers(conn: asyncpg.Connection, db: Database, *jobs: Any) -> bool:
    """Whether enqueueing these jobs NOTIFYs the dispatchers. A sentinel NOTIFY sent after the
    enqueue committed arrives after any the enqueue sent (they are delivered in commit order)."""
    got: list[str] = []
    sentinel = asyncio.Event()

    def heard(_conn: object, _pid: int, _channel: str, payload: str) -> None:
        got.append(payload)
        if payload == "sentinel":
            sentinel.set()

    await conn.add_listener(db.notify_channel, heard)
    try:
        await enqueue(conn, *jobs)
        await conn.execute("SELECT pg_notify($1, 'sentinel')", db.notify_channel)
        await asyncio.wait_for(sentinel.wait(), 5)
    finally:
        await conn.remove_listener(db.notify_channel, heard)
    return got != ["sentinel"]


async def test_enqueue_wakes_the_dispatchers_only_for_work_they_may_claim_now(conn, db: Database) -> None:
    async with db.transaction() as c:
        await QueueRepository().set_paused(c, "held", True)
    assert await wakes_dispatchers(conn, db, {"handler": "h"})
    assert await wakes_dispatchers(conn, db, {"handler": "h", "delay_seconds": 0})
    assert not await wakes_dispatchers(conn, db, {"handler": "h", "run_at": "2999-01-01T00:00:00Z"})
    assert not await wakes_dispatchers(conn, db, {"handler": "h", "delay_seconds": 60})
    assert not await wakes_dispatchers(conn, db, {"handler": "h", "queue": "held"})
    assert await wakes_dispatchers(conn, db, {"handler": "h", "queue": "held"}, {"handler": "h", "queue": "open"})
    # A key that returns the execution stored before inserts nothing: nothing new to claim.
    assert await wakes_dispatchers(conn, db, {"handler": "h", "idempotency_key": "once"})
    assert not await wakes_dispatchers(conn, db, {"handler": "h", "idempotency_key": "once"})


async def test_only_the_jobs_with_a_key_are_inserted_on_conflict(conn: asyncpg.Connection) -> None:
    """An INSERT … ON CONFLICT is speculative for each row it inserts, and PostgreSQL writes a WAL
    record confirming each (HEAP_CONFIRM); a job without an idempotency key cannot conflict and
    goes in by a plain insert. Read in the WAL of the enqueue's own transaction."""
    await conn.execute("CREATE EXTENSION IF NOT EXISTS pg_walinspect")
    start = await conn.fetchval("SELECT pg_current_wal_insert_lsn()")
    async with conn.transaction():
        xid = await conn.fetchval("SELECT CAST(CAST(txid_current() AS text) AS bigint)")
        rows = await enqueue(conn, *[{"handler": "h"} for _ in range(5)],
                             *[{"handler": "h", "idempotency_key": f"k{i}"} for i in range(2)])
    end = await conn.fetchval("SELECT pg_current_wal_insert_lsn()")
    records = await conn.fetch("SELECT record_type, count(*) AS n FROM pg_get_wal_records_info($1, $2)"
                               " WHERE CAST(CAST(xid AS text) AS bigint) = $3 AND resource_manager = 'Heap'"
                               " GROUP BY record_type", start, end, xid)
    inserted = {r["record_type"]: r["n"] for r in records}
    assert [r["created"] for r in rows] == [True] * 7
    assert inserted.get("HEAP_CONFIRM") == 2, inserted
    assert sum(n for kind, n in inserted.items() if kind.startswith("INSERT")) == 7, inserted
