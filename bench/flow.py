"""flow: what flow control costs (issue 22), each ratio measured side by side in one run.

- drain: the sync drain of bench/drain.py for a handler that uses no flow control, and for one
  with key_concurrency 2 whose N jobs are spread over 1,000 concurrency keys, the two taking turns
  run by run on one `jobwire serve` of its own (target: keyed ≥ 0.8× plain).
- claim: the claim (ExecutionRepository.claim of 64, one call of jobwire_claim, rolled back, as
  bench/claim_cost.py times it) with a backlog of plain jobs, and with the same backlog spread over
  10,000 distinct concurrency keys, every one due, the two schemas taking turns claim by claim
  (target: keyed ≤ 1.5× plain).
- rate: a handler with rate_limit {limit: R, period_seconds: 1} drains 6·R jobs; the rate the
  handler saw, (calls - 1) ÷ (last call - first call), beside R (target: within 10 %).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

import aiohttp

from bench import drain, jobwire_db
from bench.claim_cost import HANDLER_SQL, ClaimTables
from bench.pg import Server
from bench.processes import Child, start_jobwire
from bench.stats import claim_summary
from bench.target import JSON, Target, body, expect, handler_call, register_handlers, set_paused

KEYED_HANDLER = "bench-keyed"
RATED_HANDLER = "bench-rated"
KEYS = 1_000


async def _keyed_drain(t: Target, n: int, run: int) -> dict[str, Any]:
    """drain.drain's measurement for jobs spread over KEYS keys of a key_concurrency 2 handler."""
    queue = f"bench-flow-keyed-{run}"
    conn = await jobwire_db.connect(t.dsn, t.schema)
    try:
        async with aiohttp.ClientSession() as http:
            await set_paused(http, t, queue, True)
            for start in range(0, n, 1000):
                jobs = [{"handler": KEYED_HANDLER, "queue": queue, "payload": {"i": i},
                         "concurrency_key": f"customer:{i % KEYS}"} for i in range(start, min(start + 1000, n))]
                async with http.post(f"{t.api}/v1/jobs/batch", data=body({"jobs": jobs}), headers=JSON) as r:
                    await expect(r, 201)
            await conn.execute("VACUUM ANALYZE job_executions")
            await handler_call(http, t, "POST", "/reset")
            resumed = time.time()
            await set_paused(http, t, queue, False)
            while await jobwire_db.pending(conn, queue) is not False:
                await asyncio.sleep(0.025)
            emptied = time.time()
            stats = await handler_call(http, t, "GET", "/stats")
        counts = await jobwire_db.state_counts(conn, queue)
    finally:
        await jobwire_db.clear_queue(conn, queue)
        await conn.close()
    seconds = emptied - (stats["first_at"] or resumed)
    return {"jobs": n, "keys": KEYS, "seconds": round(seconds, 3), "jobs_per_s": round(n / seconds, 1),
            "succeeded": counts.get("SUCCEEDED", 0), "dispatched_twice": stats["dispatched_twice"]}


async def _rate(t: Target, limit: int, run: int) -> dict[str, Any]:
    queue = f"bench-flow-rate-{run}"
    n = 6 * limit
    conn = await jobwire_db.connect(t.dsn, t.schema)
    try:
        async with aiohttp.ClientSession() as http:
            await set_paused(http, t, queue, True)
            jobs = [{"handler": RATED_HANDLER, "queue": queue, "payload": {"i": i}} for i in range(n)]
            async with http.post(f"{t.api}/v1/jobs/batch", data=body({"jobs": jobs}), headers=JSON) as r:
                await expect(r, 201)
            await handler_call(http, t, "POST", "/reset")
            await set_paused(http, t, queue, False)
            while await jobwire_db.pending(conn, queue) is not False:
                await asyncio.sleep(0.025)
            stats = await handler_call(http, t, "GET", "/stats")
    finally:
        await jobwire_db.clear_queue(conn, queue)
        await conn.close()
    span = stats["last_at"] - stats["first_at"]
    measured = (stats["received"] - 1) / span
    return {"limit_per_s": limit, "jobs": n, "span_s": round(span, 3), "measured_per_s": round(measured, 2),
            "ratio_to_limit": round(measured / limit, 3)}


async def _drains(server: Server, n: int, runs: int, concurrency: int | None, handler: Child, rate: int,
                  log: Callable[[str], None]) -> dict[str, Any]:
    dsn = await server.create_database("flow")
    node = await start_jobwire(dsn, None, concurrency)
    t = Target(api=node.url, handler=handler.url, dsn=dsn, schema=None, jobwire_pid=node.pid, handler_pid=handler.pid)
    plain: list[dict[str, Any]] = []
    keyed: list[dict[str, Any]] = []
    rates: list[dict[str, Any]] = []
    try:
        async with aiohttp.ClientSession() as http:
            await register_handlers(http, t)
            for name, extra in ((KEYED_HANDLER, {"key_concurrency": 2}),
                                (RATED_HANDLER, {"rate_limit": {"limit": rate, "period_seconds": 1}})):
                async with http.put(f"{t.api}/v1/handlers/{name}", json={"url": f"{t.handler}/sync", **extra}) as r:
                    await expect(r, 200, 201)
        for run in range(1, runs + 1):
            order = ("plain", "keyed") if run % 2 else ("keyed", "plain")
            for side in order:
                if side == "plain":
                    res = await drain.drain(t, "sync", n, run)
                    plain.append({k: v for k, v in res.items() if k in ("jobs_per_s", "seconds", "lost",
                                                                        "dispatched_twice")})
                else:
                    keyed.append(res := await _keyed_drain(t, n, run))
                log(f"flow drain {side} run {run}: {res['jobs_per_s']} jobs/s")
            rates.append(res := await _rate(t, rate, run))
            log(f"flow rate run {run}: {res['measured_per_s']} calls/s at a limit of {rate}/s")
    finally:
        node.stop()
        await server.drop_database(dsn)
    med = _median
    return {
        "plain": {"jobs_per_s": med([r["jobs_per_s"] for r in plain]), "runs": plain},
        "keyed": {"jobs_per_s": med([r["jobs_per_s"] for r in keyed]), "runs": keyed},
        "ratio_keyed_to_plain": round(med([r["jobs_per_s"] for r in keyed]) / med([r["jobs_per_s"] for r in plain]),
                                      3),
        "rate": {"ratio_to_limit": med([r["ratio_to_limit"] for r in rates]), "runs": rates},
    }


def _median(values: list[float]) -> float:
    ordered = sorted(values)
    middle = len(ordered) // 2
    return ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2


KEYED_INSERT_SQL = """
INSERT INTO job_executions (job_id, job_type, handler, queue, state, payload, priority, scheduled_at,
                            concurrency_key, fair_tag)
SELECT 'claim-' || g, 'DELAYED', 'bench-noop', 'default', 'ENQUEUED', jsonb_build_object('i', g), 0,
       now() - interval '1 day' + g * interval '1 ms', 'key-' || (g % $3), g / $3
FROM generate_series(CAST($1 AS bigint), CAST($2 AS bigint)) AS g
"""
PLAIN_INSERT_SQL = """
INSERT INTO job_executions (job_id, job_type, handler, queue, state, payload, priority, scheduled_at)
SELECT 'claim-' || g, 'DELAYED', 'bench-noop', 'default', 'ENQUEUED', jsonb_build_object('i', g), 0,
       now() - interval '1 day' + g * interval '1 ms'
FROM generate_series(CAST($1 AS bigint), CAST($2 AS bigint)) AS g
"""


class KeyTables(ClaimTables):
    """Two schemas with the same backlog: 0 → plain jobs; `keys` → spread over that many keys of a
    handler with key_concurrency 2 (its flow row says it has keys, as the first keyed enqueue does)."""

    def __init__(self, database_url: str, keys: int, batch: int, backlog: int) -> None:
        super().__init__(database_url, (0, keys), batch)
        self.backlog = backlog

    async def fill(self) -> None:
        from app.db.connection import DatabaseConfig, create_pool
        from app.db.migrate import upgrade_sync

        for keys in self.sizes:
            schema = f"flow_keys_{keys}"
            await asyncio.to_thread(upgrade_sync, self.database_url, schema)
            pool = await create_pool(DatabaseConfig(url=self.database_url, schema=schema, pool_size=1))
            async with pool.acquire() as conn:
                async with conn.transaction():
                    await conn.execute(HANDLER_SQL)
                    if keys:
                        await conn.execute("UPDATE job_handlers SET key_concurrency = 2")
                        await conn.execute("INSERT INTO job_handler_flow (handler, keyed) VALUES ('bench-noop', true)")
                        await conn.execute(KEYED_INSERT_SQL, 1, self.backlog, keys)
                    else:
                        await conn.execute(PLAIN_INSERT_SQL, 1, self.backlog)
                await conn.execute("VACUUM ANALYZE job_executions")
            self.engines[keys] = pool


async def _claims(server: Server, keys: int, batch: int, reps: int, log: Callable[[str], None]) -> dict[str, Any]:
    dsn = await server.create_database("flow_claim")
    tables = KeyTables(dsn, keys, batch, backlog=keys * 2)
    try:
        await tables.fill()
        await tables.time(10)
        times = await tables.time(reps)
        plans = await tables.plans()
    finally:
        await tables.close()
        await server.drop_database(dsn)
    out = claim_summary(tables.sizes, batch, reps, times, plans)
    out["backlog"] = keys * 2
    log(f"flow claim: plain {out['sizes']['0']['median_ms']} ms, {keys:,} keys due "
        f"{out['sizes'][str(keys)]['median_ms']} ms (× {out['ratio_large_to_small']})")
    return out


async def flow(server: Server, n: int, runs: int, concurrency: int | None, handler: Child, claim_batch: int,
               claim_reps: int, log: Callable[[str], None], keys: int = 10_000, rate: int = 50) -> dict[str, Any]:
    out = await _drains(server, n, runs, concurrency, handler, rate, log)
    log(f"flow drain: keyed {out['keyed']['jobs_per_s']} / plain {out['plain']['jobs_per_s']} jobs/s "
        f"(× {out['ratio_keyed_to_plain']}); rate × {out['rate']['ratio_to_limit']} of its limit")
    out["claim"] = await _claims(server, keys, claim_batch, claim_reps, log)
    return out
