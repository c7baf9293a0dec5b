"""(c) Idle latency: one job at a time on an idle Jobwire, from just before POST /v1/jobs until
the handler receives it (the handler's own clock, same machine); p50/p95/p99 in milliseconds.
Shows that LISTEN/NOTIFY wakes the dispatcher (the fallback poll is 1 s)."""

from __future__ import annotations

import asyncio
import time

import aiohttp

from bench import jobwire_db
from bench.stats import percentile
from bench.target import SYNC_HANDLER, Target, expect, handler_call


async def idle_latency(t: Target, n: int, run: int, gap: float = 0.01) -> dict:
    queue = f"bench-latency-{run}"
    conn = await jobwire_db.connect(t.dsn, t.schema)
    samples: list[float] = []
    try:
        async with aiohttp.ClientSession() as http:
            await handler_call(http, t, "POST", "/reset")
            for i in range(n):
                sent = time.time()
                async with http.post(f"{t.api}/v1/jobs", json={"handler": SYNC_HANDLER, "queue": queue,
                                                               "payload": {"i": i}}) as r:
                    execution_id = (await expect(r, 201))["id"]
                received = (await handler_call(http, t, "GET", f"/wait/{execution_id}"))["received_at"]
                samples.append((received - sent) * 1000)
                await asyncio.sleep(gap)  # let the outcome be written: the next job meets an idle node
    finally:
        await jobwire_db.clear_queue(conn, queue)
        await conn.close()
    samples.sort()
    return {"jobs": n, "p50_ms": round(percentile(samples, 50), 2), "p95_ms": round(percentile(samples, 95), 2),
            "p99_ms": round(percentile(samples, 99), 2), "max_ms": round(samples[-1], 2)}
