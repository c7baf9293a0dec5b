"""(e) Claim cost with 1,000 and with 1,000,000 ENQUEUED rows in job_executions.

In a database of its own (migrated like Jobwire's), rows are inserted with generate_series
and ANALYZEd; then ExecutionRepository.claim, exactly as the dispatcher calls it (both
statements: the advisory-lock statement and the claim), is timed many times, each in a
transaction that is rolled back, so every repetition sees the same table. The EXPLAIN
(ANALYZE, BUFFERS) of both statements at each size is part of the output."""

from __future__ import annotations

import asyncio
import statistics
import time
from typing import Any

from sqlalchemy import event, text

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


async def claim_cost(database_url: str, sizes: tuple[int, ...], batch: int, reps: int) -> dict[str, Any]:
    await asyncio.to_thread(upgrade_sync, database_url, None)
    engine = create_engine(DatabaseConfig(url=database_url, pool_size=1))
    captured: list[tuple[str, Any]] = []
    event.listen(engine.sync_engine, "before_cursor_execute",
                 lambda _c, _cur, statement, params, _ctx, _many: captured.append((statement, params)))
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
                    captured.clear()
                    started = time.perf_counter()
                    claimed = await repo.claim(conn, "bench-claim", batch, [], 120.0)
                    elapsed = time.perf_counter() - started
                    await tx.rollback()
                if len(claimed) != batch:
                    raise RuntimeError(f"claim took {len(claimed)} of {batch} with {size} rows queued")
                if i >= 10:  # the first ten warm the caches and the prepared statements
                    times.append(elapsed * 1000)
            statements = list(captured)
            plans = []
            async with engine.connect() as conn:
                tx = await conn.begin()
                for statement, params in statements:
                    rows = await conn.exec_driver_sql(f"EXPLAIN (ANALYZE, BUFFERS) {statement}", params)
                    plans.append("\n".join(r[0] for r in rows))
                await tx.rollback()
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
