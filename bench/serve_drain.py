"""End-to-end drain through a real `jobwire serve`: N no-op jobs, zero lost, zero twice.

    python -m bench.serve_drain --jobs 10000 [--database-url postgresql://…]

Starts a no-op handler process and one `jobwire serve` process (embedded PostgreSQL in a fresh
temporary data directory unless --database-url is given), enqueues N jobs due a few seconds
ahead (so the queue is full when dispatch starts), and times the first handler call until
every job is SUCCEEDED. Prints one JSON line.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import aiohttp


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def wait_http(session: aiohttp.ClientSession, url: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            async with session.get(url) as r:
                if r.status == 200:
                    return
        except aiohttp.ClientError:
            pass
        await asyncio.sleep(0.1)
    raise SystemExit(f"{url} not ready")


async def run(args: argparse.Namespace) -> dict:
    bin_dir = Path(sys.executable).parent
    handler_port, jobwire_port = free_port(), free_port()
    data_dir = tempfile.mkdtemp(prefix="jobwire-bench-")
    env = {k: v for k, v in os.environ.items() if not k.startswith("JOBWIRE_")}
    env.update(JOBWIRE_PORT=str(jobwire_port), JOBWIRE_DATA_DIR=data_dir, JOBWIRE_CONCURRENCY=str(args.concurrency))
    if args.database_url:
        env["JOBWIRE_DATABASE_URL"] = args.database_url
        env["JOBWIRE_DB_SCHEMA"] = f"bench_{os.getpid()}"
    handler = subprocess.Popen([sys.executable, "-m", "bench.noop_handler", "--port", str(handler_port)])
    server = subprocess.Popen([str(bin_dir / "jobwire"), "serve", "--log-level", "warning"], env=env)
    base = f"http://127.0.0.1:{jobwire_port}"
    try:
        async with aiohttp.ClientSession() as http:
            await wait_http(http, f"{base}/readyz")
            await wait_http(http, f"http://127.0.0.1:{handler_port}/stats")
            async with http.put(f"{base}/v1/handlers/noop", json={"url": f"http://127.0.0.1:{handler_port}/work"}) as r:
                assert r.status in (200, 201), await r.text()
            run_at = (datetime.now(UTC) + timedelta(seconds=args.lead)).isoformat()
            enqueue_started = time.monotonic()
            for start in range(0, args.jobs, 1000):
                jobs = [{"handler": "noop", "payload": {"i": i}, "run_at": run_at}
                        for i in range(start, min(start + 1000, args.jobs))]
                async with http.post(f"{base}/v1/jobs/batch", json={"jobs": jobs}) as r:
                    assert r.status == 201, await r.text()
            enqueue_seconds = time.monotonic() - enqueue_started
            if enqueue_seconds > args.lead:
                raise SystemExit(f"enqueue took {enqueue_seconds:.1f}s, over the {args.lead}s lead: raise --lead")
            deadline = time.monotonic() + 600
            while time.monotonic() < deadline:
                async with http.get(f"http://127.0.0.1:{handler_port}/stats") as r:
                    stats = await r.json()
                if stats["distinct"] >= args.jobs:
                    break
                await asyncio.sleep(0.05)
            # Every job reached the handler; now wait for every outcome to be recorded.
            while True:
                async with http.get(f"{base}/v1/executions", params={"state": "ENQUEUED", "limit": 1}) as r:
                    enq = (await r.json())["items"]
                async with http.get(f"{base}/v1/executions", params={"state": "PROCESSING", "limit": 1}) as r:
                    proc = (await r.json())["items"]
                if not enq and not proc:
                    break
                await asyncio.sleep(0.02)
            finished = time.time()
            cursor, succeeded = None, 0
            while True:
                params = {"state": "SUCCEEDED", "limit": 500, **({"cursor": cursor} if cursor else {})}
                async with http.get(f"{base}/v1/executions", params=params) as r:
                    page = await r.json()
                succeeded += len(page["items"])
                cursor = page["next_cursor"]
                if not cursor:
                    break
        elapsed = finished - stats["first_at"]
        return {
            "jobs": args.jobs,
            "succeeded": succeeded,
            "handler_received": stats["received"],
            "distinct": stats["distinct"],
            "dispatched_twice": stats["duplicates"],
            "lost": args.jobs - succeeded,
            "seconds": round(elapsed, 3),
            "jobs_per_second": round(args.jobs / elapsed),
            "enqueue_jobs_per_second": round(args.jobs / enqueue_seconds),
            "database": "external" if args.database_url else "embedded",
        }
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(60)
        handler.terminate()
        handler.wait(10)
        if args.database_url:
            await drop_schema(args.database_url, env["JOBWIRE_DB_SCHEMA"])


async def drop_schema(url: str, schema: str) -> None:
    import asyncpg

    conn = await asyncpg.connect(url)
    try:
        await conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
    finally:
        await conn.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=10_000)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--lead", type=float, default=8.0, help="seconds between enqueue start and run_at")
    parser.add_argument("--database-url")
    args = parser.parse_args()
    print(json.dumps(asyncio.run(run(args))))


if __name__ == "__main__":
    main()
