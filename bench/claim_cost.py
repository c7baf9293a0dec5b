"""(e) Claim cost with 1,000 and with 1,000,000 ENQUEUED rows in job_executions.

In a database of its own (migrated like Jobwire's), rows are inserted with generate_series
and ANALYZEd; then ExecutionRepository.claim, exactly as the dispatcher calls it (one call of
jobwire_claim: its lock statements, then the claim), is timed many times, each in a
transaction that is rolled back, so every repetition sees the same table. The EXPLAIN
(ANALYZE, BUFFERS) of every statement inside jobwire_claim at each size (auto_explain) is part
of the output."""

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


async def claim_cost(database_url: str, sizes: tuple[int, ...], batch: int, reps: int) -> dict[str, Any]:
    await asyncio.to_thread(upgrade_sync, database_url, None)
    engine = create_engine(DatabaseConfig(url=database_url, pool_size=1))
    repo = ExecutionRepository()
    out: dict[str, Any] = {"batch": batch, "repetitions": reps, "sizes": {}}
    try:
        async with engine.begin() as conn:
            await conn.execute(text("INSERT INTO job_handlers (name, url, secret) "
                                    "VALUES ('bench-noop', 'http://127.0.0.1:9/', 'whsec_bench')"))
        have = 0
        for size in sizes:
            async with engine.begin() as conn:
                await conn.execute(INSERT, {"first": have + 1, "last": size})
            have = size
            async with engine.connect() as conn:
                await conn.execution_options(isolation_level="AUTOCOMMIT")
                await conn.execute(text("VACUUM ANALYZE job_executions"))
            times = []
            for i in range(reps + 10):
                async with engine.connect() as conn:
                    tx = await conn.begin()
                    started = time.perf_counter()
                    claimed = await repo.claim(conn, "bench-claim", batch, [], 120.0)
                    elapsed = time.perf_counter() - started
                    await tx.rollback()
                if len(claimed) != batch:
                    raise RuntimeError(f"claim took {len(claimed)} of {batch} with {size} rows queued")
                if i >= 10:  # the first ten warm the caches and the prepared statements
                    times.append(elapsed * 1000)
            plans = await _claim_plans(engine, repo, batch)
            times.sort()
            out["sizes"][str(size)] = {
                "rows": size,
                "median_ms": round(statistics.median(times), 3),
                "p95_ms": round(percentile(times, 95), 3),
                "min_ms": round(times[0], 3),
                "explain": plans,
            }
    finally:
        await engine.dispose()
    small, large = (out["sizes"][str(s)]["median_ms"] for s in (sizes[0], sizes[-1]))
    out["ratio_large_to_small"] = round(large / small, 2)
    return out
