"""Procrastinate (psycopg 3 pool): enqueue (16 concurrent single defers, batch_defer of 1,000)
and the in-process no-op drain with run_worker_async(wait=False), concurrency 20 (pool 24).

    python -m bench.peers.procrastinate_peer --dsn postgresql://… --jobs 20000 --runs 3
"""

from __future__ import annotations

import asyncio
import json
import logging
import time

import procrastinate
import psycopg
import uvloop

from bench.peers.common import DrainClock, parse_args, rate

CLOCK = DrainClock()
WORKER_CONCURRENCY, POOL = 20, 24


def make_app(dsn: str, pool_max: int | None = None) -> procrastinate.App:
    kw = {} if pool_max is None else {"min_size": min(4, pool_max), "max_size": pool_max}
    app = procrastinate.App(connector=procrastinate.PsycopgConnector(conninfo=dsn, **kw))

    @app.task(name="noop", queue="bench")
    async def noop() -> None:
        CLOCK.tick()

    app.bench_noop = noop  # type: ignore[attr-defined]
    return app


async def reset(dsn: str) -> None:
    async with await psycopg.AsyncConnection.connect(dsn, autocommit=True) as conn:
        installed = (await (await conn.execute("SELECT to_regclass('procrastinate_jobs')")).fetchone())[0]
    if not installed:
        app = make_app(dsn)
        async with app.open_async():
            await app.schema_manager.apply_schema_async()
    async with await psycopg.AsyncConnection.connect(dsn, autocommit=True) as conn:
        await conn.execute("TRUNCATE procrastinate_jobs, procrastinate_events, procrastinate_workers "
                           "RESTART IDENTITY CASCADE")
        await conn.execute("VACUUM ANALYZE")


async def enqueue_single(dsn: str, n: int, clients: int) -> dict:
    app = make_app(dsn, pool_max=clients)
    per = n // clients
    async with app.open_async():
        async def client() -> None:
            for _ in range(per):
                await app.bench_noop.defer_async()  # type: ignore[attr-defined]

        started = time.perf_counter()
        await asyncio.gather(*(client() for _ in range(clients)))
        return rate(per * clients, time.perf_counter() - started)


async def enqueue_batch(dsn: str, n: int, size: int = 1000) -> dict:
    app = make_app(dsn)
    async with app.open_async():
        started = time.perf_counter()
        for start in range(0, n, size):
            await app.bench_noop.batch_defer_async(*([{}] * min(size, n - start)))  # type: ignore[attr-defined]
        return rate(n, time.perf_counter() - started)


async def drain(dsn: str, n: int) -> dict:
    global CLOCK
    await enqueue_batch(dsn, n)
    CLOCK = DrainClock()
    app = make_app(dsn, pool_max=POOL)
    watcher = await psycopg.AsyncConnection.connect(dsn, autocommit=True)
    count = "SELECT count(*) FROM procrastinate_jobs WHERE status IN ('todo', 'doing')"

    async def is_empty() -> bool:
        return (await (await watcher.execute(count)).fetchone())[0] == 0

    stop = asyncio.Event()
    poller = asyncio.create_task(CLOCK.poll(is_empty, stop))
    async with app.open_async():
        started = time.perf_counter()
        await app.run_worker_async(queues=["bench"], concurrency=WORKER_CONCURRENCY, wait=False,
                                   install_signal_handlers=False)
        ended = time.perf_counter()
    stop.set()
    await poller
    left = (await (await watcher.execute(count)).fetchone())[0]
    await watcher.close()
    return {**CLOCK.result(n, ended, started), "left": left}


async def main_async() -> None:
    args = parse_args(__doc__)
    results: dict[str, list[dict]] = {}
    for _ in range(args.runs):
        await reset(args.dsn)
        results.setdefault("enqueue_single", []).append(await enqueue_single(args.dsn, args.jobs, args.clients))
        await reset(args.dsn)
        results.setdefault("enqueue_batch", []).append(await enqueue_batch(args.dsn, args.jobs))
        await reset(args.dsn)
        results.setdefault("drain_c20", []).append(await drain(args.dsn, args.jobs))
    print(json.dumps(results))


if __name__ == "__main__":
    logging.basicConfig(level=logging.ERROR)
    uvloop.run(main_async())
