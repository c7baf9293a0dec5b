"""(e) Claim cost with 1,000 and with 1,000,000 ENQUEUED rows in job_executions.

In a database of its own, one schema per size (each migrated like Jobwire's), rows are
inserted with generate_series and ANALYZEd; then ExecutionRepository.claim, exactly as the
dispatcher calls it (one call of jobwire_claim: its lock statements, then the claim), is timed
many times, each in a transaction that is rolled back, so every repetition sees the same table.
The sizes take turns claim by claim: this machine's speed drifts by tens of percent within a
minute, and timing one size after the other measured that drift as much as the table's size
(0.76×, 1.06× and 1.59× in three runs of one day). The EXPLAIN (ANALYZE, BUFFERS)
of every statement inside jobwire_claim at each size (auto_explain) is part of the output."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from sqlalchemy import text

try:  # app.db as it was up to the asyncpg pool: a SQLAlchemy engine (a --baseline may be that old)
    from app.db.engine import DatabaseConfig, create_engine

    POOL = False
except ModuleNotFoundError as exc:  # since then: the node's asyncpg pool (app.db.connection)
    if exc.name != "app.db.engine":
        raise
    from app.db.connection import DatabaseConfig, create_pool

    POOL = True
from app.db.executions import ExecutionRepository
from app.db.migrate import upgrade_sync
from bench.stats import claim_summary

INSERT_SQL = """
INSERT INTO job_executions (job_id, job_type, handler, queue, state, payload, priority, scheduled_at)
SELECT 'claim-' || g, 'DELAYED', 'bench-noop', 'default', 'ENQUEUED', jsonb_build_object('i', g), 0,
       now() - interval '1 day' + g * interval '1 ms'
FROM generate_series(CAST({first} AS bigint), CAST({last} AS bigint)) AS g
"""
INSERT = text(INSERT_SQL.format(first=":first", last=":last"))
HANDLER_SQL = "INSERT INTO job_handlers (name, url, secret) VALUES ('bench-noop', 'http://127.0.0.1:9/', 'whsec_bench')"
EXPLAIN_SQL = "EXPLAIN (ANALYZE, BUFFERS) SELECT * FROM jobwire_claim('bench-claim', $1, 120.0, NULL)"
AUTO_EXPLAIN = ("LOAD 'auto_explain'", "SET LOCAL auto_explain.log_min_duration = 0",
                "SET LOCAL auto_explain.log_nested_statements = on",
                "SET LOCAL auto_explain.log_analyze = on", "SET LOCAL auto_explain.log_buffers = on",
                "SET LOCAL auto_explain.log_level = 'notice'")


async def _claim_plans(engine: Any, repo: ExecutionRepository, batch: int) -> list[str]:
    """EXPLAIN (ANALYZE, BUFFERS) of every statement jobwire_claim runs, from auto_explain's
    nested-statement plans sent to this session as notices (LOAD needs a superuser; without one,
    the plan of the outer call only), from a claim that is rolled back."""
    if POOL:
        return await _claim_plans_pool(engine, repo, batch)
    notices: list[str] = []
    async with engine.connect() as conn:
        tx = await conn.begin()
        raw = (await conn.get_raw_connection()).driver_connection
        raw.add_log_listener(lambda _c, message: notices.append(message.message))
        try:
            for setting in AUTO_EXPLAIN:
                await conn.exec_driver_sql(setting)
            await repo.claim(conn, "bench-claim", batch, [], 120.0)
        except Exception as exc:  # no auto_explain here: the outer statement's plan
            await tx.rollback()
            tx = await conn.begin()
            rows = await conn.exec_driver_sql(EXPLAIN_SQL, (batch,))
            notices = [f"(auto_explain unavailable: {exc})", "\n".join(r[0] for r in rows)]
        finally:
            await tx.rollback()
    return notices


async def _claim_plans_pool(pool: Any, repo: ExecutionRepository, batch: int) -> list[str]:
    """_claim_plans on the asyncpg pool of app.db.connection."""
    notices: list[str] = []

    def listener(_conn: Any, message: Any) -> None:
        notices.append(message.message)

    async with pool.acquire() as conn:
        conn.add_log_listener(listener)
        tx = conn.transaction()
        await tx.start()
        try:
            for setting in AUTO_EXPLAIN:
                await conn.execute(setting)
            await repo.claim(conn, "bench-claim", batch, [], 120.0)
        except Exception as exc:  # no auto_explain here: the outer statement's plan
            await tx.rollback()
            tx = conn.transaction()
            await tx.start()
            rows = await conn.fetch(EXPLAIN_SQL, batch)
            notices = [f"(auto_explain unavailable: {exc})", "\n".join(r[0] for r in rows)]
        finally:
            await tx.rollback()
            conn.remove_log_listener(listener)
    return notices


async def _fill(database_url: str, schema: str, rows: int) -> Any:
    """A migrated schema holding `rows` ENQUEUED jobs, vacuumed and analyzed; its engine (or pool)."""
    await asyncio.to_thread(upgrade_sync, database_url, schema)
    if POOL:
        pool = await create_pool(DatabaseConfig(url=database_url, schema=schema, pool_size=1))
        async with pool.acquire() as conn:
            async with conn.transaction():
                await conn.execute(HANDLER_SQL)
                await conn.execute(INSERT_SQL.format(first="$1", last="$2"), 1, rows)
            await conn.execute("VACUUM ANALYZE job_executions")
        return pool
    engine = create_engine(DatabaseConfig(url=database_url, schema=schema, pool_size=1))
    async with engine.begin() as conn:
        await conn.execute(text(HANDLER_SQL))
        await conn.execute(INSERT, {"first": 1, "last": rows})
    async with engine.connect() as conn:
        await conn.execution_options(isolation_level="AUTOCOMMIT")
        await conn.execute(text("VACUUM ANALYZE job_executions"))
    return engine


async def _timed_claim(engine: Any, repo: ExecutionRepository, batch: int, rows: int) -> float:
    """One claim, in a transaction rolled back afterwards. The time includes the BEGIN: SQLAlchemy
    sends it with the first statement, so on the asyncpg pool it is started inside the timing too."""
    if POOL:
        async with engine.acquire() as conn:
            started = time.perf_counter()
            tx = conn.transaction()
            await tx.start()
            claimed = await repo.claim(conn, "bench-claim", batch, [], 120.0)
            elapsed = time.perf_counter() - started
            await tx.rollback()
    else:
        async with engine.connect() as conn:
            tx = await conn.begin()
            started = time.perf_counter()
            claimed = await repo.claim(conn, "bench-claim", batch, [], 120.0)
            elapsed = time.perf_counter() - started
            await tx.rollback()
    if len(claimed) != batch:
        raise RuntimeError(f"claim took {len(claimed)} of {batch} with {rows} rows queued")
    return elapsed * 1000


class ClaimTables:
    """One schema per size in `database_url`, each migrated by the app/ this process imports and
    filled with that many ENQUEUED rows; claims timed size by size in turn."""

    def __init__(self, database_url: str, sizes: tuple[int, ...], batch: int) -> None:
        self.database_url, self.sizes, self.batch = database_url, sizes, batch
        self.repo = ExecutionRepository()
        self.engines: dict[int, Any] = {}

    async def fill(self) -> None:
        for size in self.sizes:
            self.engines[size] = await _fill(self.database_url, f"claim_{size}", size)

    async def time(self, iterations: int) -> dict[int, list[float]]:
        """`iterations` claims at each size, the sizes taking turns claim by claim: ms each."""
        times: dict[int, list[float]] = {size: [] for size in self.sizes}
        for _ in range(iterations):
            for size in self.sizes:
                times[size].append(await _timed_claim(self.engines[size], self.repo, self.batch, size))
        return times

    async def plans(self) -> dict[int, list[str]]:
        return {size: await _claim_plans(self.engines[size], self.repo, self.batch) for size in self.sizes}

    async def close(self) -> None:
        for engine in self.engines.values():
            await (engine.close() if POOL else engine.dispose())
        self.engines.clear()


async def claim_cost(database_url: str, sizes: tuple[int, ...], batch: int, reps: int) -> dict[str, Any]:
    tables = ClaimTables(database_url, sizes, batch)
    try:
        await tables.fill()
        await tables.time(10)  # the first ten at each size warm the caches and the prepared statements
        times = await tables.time(reps)
        plans = await tables.plans()
    finally:
        await tables.close()
    return claim_summary(sizes, batch, reps, times, plans)
