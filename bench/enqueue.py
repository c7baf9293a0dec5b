"""(a) Enqueue throughput: single POST /v1/jobs from 16 concurrent clients, and POST
/v1/jobs/batch with 1,000 jobs per call (sequential, each asking `Prefer: return=minimal`: the
answer is the ids alone). The queue is paused, so nothing is
dispatched meanwhile; its rows are deleted afterwards."""

from __future__ import annotations

import time

import aiohttp

from bench import jobwire_db
from bench.cpu import CpuShare
from bench.target import SYNC_HANDLER, Target, enqueue_batches, enqueue_singly, set_paused


async def single(t: Target, n: int, clients: int, run: int) -> dict:
    queue = f"bench-enqueue-single-{run}"
    per = n // clients
    conn = await jobwire_db.connect(t.dsn, t.schema)
    try:
        async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=clients)) as http:
            await set_paused(http, t, queue, True)
            with CpuShare(jobwire=t.jobwire_pid) as shares:
                cpu0, t0 = time.process_time(), time.perf_counter()
                await enqueue_singly(http, t, queue, per, clients)
                wall = time.perf_counter() - t0
                cpu = time.process_time() - cpu0
        stored = (await jobwire_db.state_counts(conn, queue)).get("ENQUEUED", 0)
        if stored != per * clients:
            raise RuntimeError(f"single enqueue stored {stored} of {per * clients}")
        return {"jobs": per * clients, "seconds": round(wall, 3), "jobs_per_s": round(per * clients / wall, 1),
                "client_cpu_share": round(cpu / wall, 2), "cpu_share": shares.shares}
    finally:
        await jobwire_db.clear_queue(conn, queue)
        await conn.close()


async def batch(t: Target, n: int, size: int, run: int) -> dict:
    queue = f"bench-enqueue-batch-{run}"
    conn = await jobwire_db.connect(t.dsn, t.schema)
    try:
        async with aiohttp.ClientSession() as http:
            await set_paused(http, t, queue, True)
            with CpuShare(jobwire=t.jobwire_pid) as shares:
                cpu0, t0 = time.process_time(), time.perf_counter()
                await enqueue_batches(http, t, SYNC_HANDLER, queue, n, size)
                wall = time.perf_counter() - t0
                cpu = time.process_time() - cpu0
        stored = (await jobwire_db.state_counts(conn, queue)).get("ENQUEUED", 0)
        if stored != n:
            raise RuntimeError(f"batch enqueue stored {stored} of {n}")
        return {"jobs": n, "seconds": round(wall, 3), "jobs_per_s": round(n / wall, 1),
                "client_cpu_share": round(cpu / wall, 2), "cpu_share": shares.shares}
    finally:
        await jobwire_db.clear_queue(conn, queue)
        await conn.close()
