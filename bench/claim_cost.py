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
import statistics
import time
from typing import Any

from sqlalchemy import text

from app.db.engine import DatabaseConfig, create_engine
from app.db.executions import ExecutionRepository
from app.db.migrate import upgrade_sync
from bench.stats import percentile

INSERT = text("""
INSERT INTO job_executions (job_id, job_type, handler, queue, state, payload, priority, scheduled_at)
SELECT 'claim-' || g, 'DELAYED', 'bench-noop', 'default', 'ENQUEUED', jsonb_build_object('i', g), 0,
       now() - interval '1 day' + g * interval '1 ms'
FROM generate_series(CAST(:first AS bigint), CAST(:last AS bigint)) AS g
""")


async def _claim_plans(engine: Any, repo: ExecutionRepository, batch: int) -> list[str]:
    """EXPLAIN (ANALYZE, BUFFERS) of every statement jobwire_claim runs, from auto_explain's
    nested-statement plans sent to this session as notices (LOAD needs a superuser; without one,
    the plan of the outer call only), from a claim that is rolled back."""
    notices: list[str] = []
    async with engine.connect() as conn:
        tx = await conn.begin()
        raw = (await conn.get_raw_connection()).driver_connection
        raw.add_log_listener(lambda _c, message: notices.append(message.message))
        try:
            for setting in ("LOAD 'auto_explain'", "SET LOCAL auto_explain.log_min_duration = 0",
                            "SET LOCAL auto_explain.log_nested_statements = on",
                            "SET LOCAL auto_explain.log_analyze = on", "SET LOCAL auto_explain.log_buffers = on",
                            "SET LOCAL auto_explain.log_level = 'notice'"):
                await conn.exec_driver_sql(setting)
            await repo.claim(conn, "bench-claim", batch, [], 120.0)
        except Exception as exc:  # no auto_explain here: the outer statement's plan
            await tx.rollback()
            tx = await conn.begin()
            rows = await conn.exec_driver_sql(
                "EXPLAIN (ANALYZE, BUFFERS) SELECT * FROM jobwire_claim('bench-claim', $1, 120.0, NULL)", (batch,))
            notices = [f"(auto_explain unavailable: {exc})", "\n".join(r[0] for r in rows)]
        finally:
            await tx.rollback()
    return notices


async def _fill(database_url: str, schema: str, rows: int) -> Any:
    """A migrated schema holding `rows` ENQUEUED jobs, vacuumed and analyzed; its engine."""
    await asyncio.to_thread(upgrade_sync, database_url, schema)
    engine = create_engine(DatabaseConfig(url=database_url, schema=schema, pool_size=1))
    async with engine.begin() as conn:
        await conn.execute(text("INSERT INTO job_handlers (name, url, secret) "
                                "VALUES ('bench-noop', 'http://127.0.0.1:9/', 'whsec_bench')"))
        await conn.execute(INSERT, {"first": 1, "last": rows})
    async with engine.connect() as conn:
        await conn.execution_options(isolation_level="AUTOCOMMIT")
        await conn.execute(text("VACUUM ANALYZE job_executions"))
    return engine


async def _timed_claim(engine: Any, repo: ExecutionRepository, batch: int, rows: int) -> float:
    async with engine.connect() as conn:
        tx = await conn.begin()
        started = time.perf_counter()
        claimed = await repo.claim(conn, "bench-claim", batch, [], 120.0)
        elapsed = time.perf_counter() - started
        await tx.rollback()
    if len(claimed) != batch:
        raise RuntimeError(f"claim took {len(claimed)} of {batch} with {rows} rows queued")
    return elapsed * 1000


async def claim_cost(database_url: str, sizes: tuple[int, ...], batch: int, reps: int) -> dict[str, Any]:
    repo = ExecutionRepository()
    out: dict[str, Any] = {"batch": batch, "repetitions": reps, "interleaved": True, "sizes": {}}
    engines: dict[int, Any] = {}
    try:
        for size in sizes:
            engines[size] = await _fill(database_url, f"claim_{size}", size)
        times: dict[int, list[float]] = {size: [] for size in sizes}
        for i in range(reps + 10):
            for size in sizes:
                elapsed = await _timed_claim(engines[size], repo, batch, size)
                if i >= 10:  # the first ten warm the caches and the prepared statements
                    times[size].append(elapsed)
        for size in sizes:
            ordered = sorted(times[size])
            out["sizes"][str(size)] = {
                "rows": size,
                "median_ms": round(statistics.median(ordered), 3),
                "p95_ms": round(percentile(ordered, 95), 3),
                "min_ms": round(ordered[0], 3),
                "explain": await _claim_plans(engines[size], repo, batch),
            }
    finally:
        for engine in engines.values():
            await engine.dispose()
    small, large = (out["sizes"][str(s)]["median_ms"] for s in (sizes[0], sizes[-1]))
    out["ratio_large_to_small"] = round(large / small, 2)
    return out
