"""Transactional enqueue for Python applications that share Jobwire's database.

`jobwire_enqueue(jobs jsonb)` (created by the migrations, in the schema of Jobwire's tables)
inserts jobs exactly as `POST /v1/jobs/batch` does: same validation, defaults, idempotency
keys, events. Called on the application's own connection, the jobs commit or roll back with
its business data, and the dispatchers are woken when the transaction commits (a NOTIFY)::

    async with engine.begin() as conn:                       # SQLAlchemy (asyncio)
        await conn.execute(orders.insert().values(id=42))
        [job] = await enqueue(conn, [{"handler": "receipts", "payload": {"order": 42}}])

    async with pool.acquire() as conn, conn.transaction():   # asyncpg
        await conn.execute("INSERT INTO orders (id) VALUES (42)")
        [job] = await enqueue(conn, [{"handler": "receipts", "payload": {"order": 42}}])

Each job is a dict with the fields of `POST /v1/jobs` (plus an optional `traceparent`);
datetimes must carry a time zone. Invalid jobs raise the driver's error for SQLSTATE 22023
(asyncpg's InvalidParameterValueError, wrapped by SQLAlchemy in a DBAPIError) whose message
names the first field at fault (`jobs[0].handler: no handler named 'x' is registered`) and whose
DETAIL lists them all as JSON; the transaction is then aborted, as for any failed statement.

The SQL works from any language; see the README, "Transactional enqueue".
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from uuid import UUID

from sqlalchemy import text

from app.domain.jsontext import dumps

RESULT_COLUMNS = "ord, created, id, job_id, state, scheduled_at"


@dataclass(frozen=True, slots=True)
class EnqueuedJob:
    ord: int  # position in the list given
    id: UUID  # the execution id
    job_id: str
    created: bool  # False: an idempotency key returned the execution stored before (same request)
    state: str
    scheduled_at: datetime


def function_name(schema: str | None = None) -> str:
    """`jobwire_enqueue`, qualified with JOBWIRE_DB_SCHEMA's schema when Jobwire has one."""
    return f'"{schema}".jobwire_enqueue' if schema else "jobwire_enqueue"


def jobs_json(jobs: Iterable[Mapping[str, Any]]) -> str:
    """The function's argument: a JSON array (datetimes as RFC 3339, UUIDs as strings, integers
    past 64 bits as their digits)."""
    return dumps(list(jobs)).decode()


async def enqueue(conn: Any, jobs: Iterable[Mapping[str, Any]], *, schema: str | None = None) -> list[EnqueuedJob]:
    """Enqueue jobs in `conn`'s current transaction: an asyncpg Connection (or pool connection),
    or a SQLAlchemy AsyncConnection or AsyncSession. One result per job, in order."""
    document = jobs_json(jobs)
    sql = f"SELECT {RESULT_COLUMNS} FROM {function_name(schema)}(CAST({{}} AS jsonb)) ORDER BY ord"
    if hasattr(conn, "fetch"):  # asyncpg
        rows = await conn.fetch(sql.format("$1"), document)
    else:  # SQLAlchemy
        rows = (await conn.execute(text(sql.format(":jobs")), {"jobs": document})).mappings().all()
    return [EnqueuedJob(ord=r["ord"], id=r["id"], job_id=r["job_id"], created=r["created"], state=r["state"],
                        scheduled_at=r["scheduled_at"]) for r in rows]
