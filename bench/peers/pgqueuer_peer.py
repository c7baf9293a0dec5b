"""PgQueuer (asyncpg): enqueue (16 concurrent single, batch of 1,000) and the in-process
no-op drain with its defaults (one PgQueuer, batch_size 10) and tuned (4 consumers × 50).

    python -m bench.peers.pgqueuer_peer --dsn postgresql://… --jobs 20000 --runs 3
"""

from __future__ import annotations

import asyncio
import json
import time

import asyncpg
import uvloop
from pgqueuer import AsyncpgDriver, AsyncpgPoolDriver, PgQueuer, Queries
from pgqueuer.domain import types
from pgqueuer.models import Job

from bench.peers.common import DrainClock, parse_args, rate

DRAINS = {"drain_default": (1, 10), "drain_tuned": (4, 50)}


async def reset(dsn: str) -> None:
    conn = await asyncpg.connect(dsn)
    try:
        queries = Queries(AsyncpgDriver(conn))
        if not await queries.schema_is_installed():
            await queries.install()
        await queries.clear_queue()
        await queries.clear_queue_log()
        await queries.clear_statistics_log()
        await conn.execute("VACUUM ANALYZE")
    finally:
        await conn.close()


async def enqueue_single(dsn: str, n: int, clients: int) -> dict:
    pool = await asyncpg.create_pool(dsn, min_size=clients, max_size=clients)
    queries = Queries(AsyncpgPoolDriver(pool))
    per = n // clients

    async def client() -> None:
        for _ in range(per):
            await queries.enqueue("noop", None)

    try:
        started = time.perf_counter()
        await asyncio.gather(*(client() for _ in range(clients)))
        return rate(per * clients, time.perf_counter() - started)
    finally:
        await pool.close()


async def enqueue_batch(dsn: str, n: int, size: int = 1000) -> dict:
    conn = await asyncpg.connect(dsn)
    queries = Queries(AsyncpgDriver(conn))
    try:
        started = time.perf_counter()
        for start in range(0, n, size):
            b = min(size, n - start)
            await queries.enqueue(["noop"] * b, [None] * b, [0] * b)
        return rate(n, time.perf_counter() - started)
    finally:
        await conn.close()


async def drain(dsn: str, n: int, consumers: int, batch_size: int) -> dict:
    await enqueue_batch(dsn, n)
    clock = DrainClock()
    conns = [await asyncpg.connect(dsn) for _ in range(consumers)]
    watcher = await asyncpg.connect(dsn)
    peers = []
    for conn in conns:
        pgq = PgQueuer(AsyncpgDriver(conn))

        @pgq.entrypoint("noop")
        async def noop(job: Job) -> None:
            clock.tick()

        peers.append(pgq)

    async def is_empty() -> bool:
        return await watcher.fetchval("SELECT count(*) FROM pgqueuer") == 0

    stop = asyncio.Event()
    poller = asyncio.create_task(clock.poll(is_empty, stop))
    started = time.perf_counter()
    await asyncio.gather(*(p.run(batch_size=batch_size, mode=types.QueueExecutionMode.drain) for p in peers))
    ended = time.perf_counter()
    stop.set()
    await poller
    left = await watcher.fetchval("SELECT count(*) FROM pgqueuer")
    for conn in [*conns, watcher]:
        if not conn.is_closed():
            await conn.close()
    return {**clock.result(n, ended, started), "left": left}


async def main_async() -> None:
    args = parse_args(__doc__)
    results: dict[str, list[dict]] = {}
    for _ in range(args.runs):
        await reset(args.dsn)
        results.setdefault("enqueue_single", []).append(await enqueue_single(args.dsn, args.jobs, args.clients))
        await reset(args.dsn)
        results.setdefault("enqueue_batch", []).append(await enqueue_batch(args.dsn, args.jobs))
        for name, (consumers, batch_size) in DRAINS.items():
            await reset(args.dsn)
            results.setdefault(name, []).append(await drain(args.dsn, args.jobs, consumers, batch_size))
    print(json.dumps(results))


if __name__ == "__main__":
    uvloop.run(main_async())
