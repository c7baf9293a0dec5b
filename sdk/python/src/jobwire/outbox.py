"""Transactional enqueue: jobs that commit with the application's own transaction, or not at all.

Jobwire's migrations create `jobwire_enqueue(jobs jsonb)` beside its tables; the API inserts
through it too, so a job enqueued here has the same validation, defaults, idempotency keys and
events as one sent to `POST /v1/jobs`, and the dispatchers are woken (a NOTIFY) when the
application's transaction commits. Nothing is sent until then, and a rollback leaves no job::

    async with pool.acquire() as conn, conn.transaction():                  # asyncpg
        await conn.execute("INSERT INTO orders (id) VALUES (42)")
        job = await outbox.enqueue(conn, "receipts", {"order": 42}, idempotency_key="receipt-42")

    with psycopg.connect(dsn) as conn:                                      # psycopg 3, sync
        conn.execute("INSERT INTO orders (id) VALUES (42)")
        job = outbox.enqueue(conn, "receipts", {"order": 42})

An asyncpg connection or a `psycopg.AsyncConnection` makes these functions return awaitables; a
sync `psycopg.Connection` makes them return the result. The connection is recognised by its
class's module, so neither driver is imported unless the application uses it. A refusal (SQLSTATE
22023) raises `ProblemError` (status 422, `errors` naming each field as the API does) from the
driver's error; as for any failed statement, the transaction is then aborted. The jobs are
written by the client's JSON encoder (`jobwire._json`): NaN, Infinity or a naive datetime raises
ValueError naming the field (`jobs[1].payload.amount`) before anything reaches the database.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from uuid import UUID

from jobwire._json import dumps, loads
from jobwire.errors import ProblemError

COLUMNS = ("ord", "created", "id", "job_id", "state", "scheduled_at")
REFUSED = "22023"  # invalid_parameter_value: jobwire_enqueue refusing a job


@dataclass(frozen=True, slots=True)
class EnqueuedJob:
    ord: int  # position in the list given, from 0
    id: UUID  # the execution id
    job_id: str
    created: bool  # False: its idempotency key returned the execution stored before (same request)
    state: str
    scheduled_at: datetime


def enqueue(conn: Any, handler: str, payload: Any = None, *, schema: str | None = None, **fields: Any) -> Any:
    """Enqueue one job in `conn`'s transaction (fields as for `POST /v1/jobs`, plus `traceparent`)
    → its EnqueuedJob (an awaitable of it on an async connection). `schema`: Jobwire's
    JOBWIRE_DB_SCHEMA, when it has one."""
    job = {"handler": handler, "payload": payload, **fields}
    result = enqueue_many(conn, [job], schema=schema)
    if inspect.isawaitable(result):
        return _first(result)
    return result[0]


async def _first(result: Any) -> EnqueuedJob:
    jobs: list[EnqueuedJob] = await result
    return jobs[0]


def enqueue_many(conn: Any, jobs: Iterable[Mapping[str, Any]], *, schema: str | None = None) -> Any:
    """Enqueue jobs in `conn`'s transaction → one EnqueuedJob per job, in order (an awaitable of
    the list on an async connection)."""
    document = dumps([{k: v for k, v in job.items() if v is not None} for job in jobs], where="jobs")
    sql = f"SELECT {', '.join(COLUMNS)} FROM {function_name(schema)}({{}}::jsonb) ORDER BY ord"
    kind = connection_kind(conn)
    if kind == "asyncpg":
        return _asyncpg(conn, sql.format("$1"), document)
    if kind == "psycopg-async":
        return _psycopg_async(conn, sql.format("%s"), document)
    return _psycopg(conn, sql.format("%s"), document)


def function_name(schema: str | None) -> str:
    if not schema:
        return "jobwire_enqueue"
    return '"' + schema.replace('"', '""') + '".jobwire_enqueue'


def connection_kind(conn: Any) -> str:
    """`asyncpg`, `psycopg` or `psycopg-async`, from the connection's class (asyncpg's pool hands
    out a PoolConnectionProxy, from asyncpg's modules too)."""
    module = type(conn).__module__.split(".")[0]
    if module == "asyncpg":
        return "asyncpg"
    if module == "psycopg":
        return "psycopg-async" if inspect.iscoroutinefunction(conn.execute) else "psycopg"
    raise TypeError(f"jobwire.outbox takes an asyncpg or psycopg 3 connection, not {type(conn).__qualname__}")


def _rows(rows: Iterable[Any]) -> list[EnqueuedJob]:
    return [EnqueuedJob(**dict(zip(COLUMNS, tuple(row), strict=True))) for row in rows]


async def _asyncpg(conn: Any, sql: str, document: str) -> list[EnqueuedJob]:
    try:
        rows = await conn.fetch(sql, document)
    except Exception as exc:
        _raise_refusal(exc, str(exc), getattr(exc, "detail", None))
        raise
    return _rows(rows)


async def _psycopg_async(conn: Any, sql: str, document: str) -> list[EnqueuedJob]:
    from psycopg.rows import tuple_row

    try:
        async with conn.cursor(row_factory=tuple_row) as cursor:
            await cursor.execute(sql, (document,))
            return _rows(await cursor.fetchall())
    except Exception as exc:
        diag = getattr(exc, "diag", None)
        _raise_refusal(exc, getattr(diag, "message_primary", None), getattr(diag, "message_detail", None))
        raise


def _psycopg(conn: Any, sql: str, document: str) -> list[EnqueuedJob]:
    from psycopg.rows import tuple_row

    try:
        with conn.cursor(row_factory=tuple_row) as cursor:
            cursor.execute(sql, (document,))
            return _rows(cursor.fetchall())
    except Exception as exc:
        diag = getattr(exc, "diag", None)
        _raise_refusal(exc, getattr(diag, "message_primary", None), getattr(diag, "message_detail", None))
        raise


def _raise_refusal(exc: Exception, message: str | None, detail: str | None) -> None:
    """Raise the driver's error for a refused job as a ProblemError; return for any other."""
    if getattr(exc, "sqlstate", None) != REFUSED or not (message or "").startswith("jobwire_enqueue"):
        return
    try:
        errors = loads(detail) if detail else []
    except ValueError:
        errors = []
    raise ProblemError(422, "Invalid jobs", message, errors=errors, body=detail) from exc
