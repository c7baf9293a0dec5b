"""Direct SQL on Jobwire's own tables, for the harness only: is a queue drained, what states
did it end in, and clearing a measurement's rows so the next one starts from the same table."""

from __future__ import annotations

import asyncpg


async def connect(dsn: str, schema: str | None) -> asyncpg.Connection:
    settings = {"search_path": f'"{schema}"'} if schema else {}
    return await asyncpg.connect(dsn, server_settings=settings)


async def pending(conn: asyncpg.Connection, queue: str) -> bool:
    """Anything of the queue still ENQUEUED, or anything PROCESSING (one queue runs at a time)."""
    return bool(await conn.fetchval(
        "SELECT EXISTS (SELECT 1 FROM job_executions WHERE state = 'ENQUEUED' AND queue = $1)"
        " OR EXISTS (SELECT 1 FROM job_executions WHERE state = 'PROCESSING')", queue))


async def state_counts(conn: asyncpg.Connection, queue: str) -> dict[str, int]:
    rows = await conn.fetch("SELECT state, count(*) AS n FROM job_executions WHERE queue = $1 GROUP BY state", queue)
    return {r["state"]: r["n"] for r in rows}


async def clear_queue(conn: asyncpg.Connection, queue: str) -> None:
    await conn.execute("DELETE FROM job_events WHERE execution_id IN (SELECT id FROM job_executions WHERE queue = $1)",
                       queue)
    await conn.execute("DELETE FROM job_executions WHERE queue = $1", queue)
    await conn.execute("DELETE FROM job_queues WHERE name = $1", queue)
    await conn.execute("VACUUM ANALYZE job_executions")
    await conn.execute("VACUUM ANALYZE job_events")
