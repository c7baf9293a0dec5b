"""(b) End-to-end drain and (d) peak RSS: N jobs enqueued up front into a paused queue, the queue
resumed, and the time from the handler's first call until no job of it is ENQUEUED or PROCESSING (a
25 ms poller on the database, as the peers are timed). jobs/s = N ÷ that time.

Modes: "sync" (the handler answers 200), "callback" (202, then POST …/complete from the handler
process) and "batch" (a batching handler, `batch: {max_size: 50, max_wait_ms: 0}`: up to 50 jobs
per call, answered with an outcome each; issue 26). Lost = N − SUCCEEDED; dispatched twice =
executions the handler itself saw more than once. The Jobwire process's peak RSS is sampled
throughout. WAL bytes per job: the WAL PostgreSQL wrote (pg_current_wal_insert_lsn() before and
after) while the jobs were enqueued and while they drained, divided by N (the VACUUM ANALYZE
between the two is left out; the poller's reads write none); the database is the benchmark's own,
so little else writes meanwhile.

A `probe` (the scale steps: bench/saturation.py, bench/drain_pruning.py) wraps the enqueue and the
drain in windows of its own (`probe.window("enqueue")`, `probe.window("drain")`: what PostgreSQL
spent, how many history rows the pruner deleted meanwhile) and, with `probe.vacuum`, times a VACUUM
of the tables the drain wrote (`probe.window("vacuum")`) before the rows are cleared."""

from __future__ import annotations

import asyncio
import time
from contextlib import nullcontext
from typing import Any

import aiohttp

from bench import jobwire_db
from bench.cpu import CpuShare
from bench.rss import PeakRss
from bench.target import (
    BATCH_HANDLER, CALLBACK_HANDLER, SYNC_HANDLER, Target, enqueue_batches, handler_call, set_paused,
)

HANDLERS = {"sync": SYNC_HANDLER, "callback": CALLBACK_HANDLER, "batch": BATCH_HANDLER}


def _no_window(_phase: str) -> Any:
    return nullcontext()


async def drain(t: Target, mode: str, n: int, run: int, timeout: float = 900, probe: Any = None,
                clear: bool = True) -> dict:
    """One drain of n jobs (module docstring). `clear=False` leaves the rows (a database about to
    be dropped: drain_pruning)."""
    queue = f"bench-drain-{mode}-{run}"
    window = probe.window if probe is not None else _no_window
    conn = await jobwire_db.connect(t.dsn, t.schema)
    try:
        async with aiohttp.ClientSession() as http:
            await set_paused(http, t, queue, True)
            wal = await _wal_lsn(conn)
            async with window("enqueue"):
                await enqueue_batches(http, t, HANDLERS[mode], queue, n)
            enqueue_wal = await _wal_since(conn, wal)
            await conn.execute("VACUUM ANALYZE job_executions")
            await handler_call(http, t, "POST", "/reset")
            async with window("drain"):
                with PeakRss(t.jobwire_pid) as rss, CpuShare(jobwire=t.jobwire_pid, handler=t.handler_pid) as cpu:
                    resumed = time.time()
                    wal = await _wal_lsn(conn)
                    await set_paused(http, t, queue, False)
                    deadline = time.monotonic() + timeout
                    while True:
                        if await jobwire_db.pending(conn, queue) is False:
                            emptied = time.time()
                            drain_wal = await _wal_since(conn, wal)
                            break
                        if time.monotonic() > deadline:
                            raise RuntimeError(f"{mode} drain of {n} not done after {timeout}s")
                        await asyncio.sleep(0.025)
            stats = await handler_call(http, t, "GET", "/stats")
        counts = await jobwire_db.state_counts(conn, queue)
        if probe is not None and getattr(probe, "vacuum", False):
            async with window("vacuum"):  # the dead row versions the drain left, as autovacuum would clear them
                await conn.execute("VACUUM job_executions")
                await conn.execute("VACUUM job_events")
    finally:
        if clear:
            await jobwire_db.clear_queue(conn, queue)
        await conn.close()
    first = stats["first_at"] or resumed
    seconds = emptied - first
    succeeded = counts.get("SUCCEEDED", 0)
    return {
        "jobs": n,
        "seconds": round(seconds, 3),
        "jobs_per_s": round(n / seconds, 1),
        "start_delay_s": round(first - resumed, 3),
        "succeeded": succeeded,
        "lost": n - succeeded,
        "handler_received": stats["received"],
        "handler_distinct": stats["distinct"],
        "dispatched_twice": stats["dispatched_twice"],
        "completions_failed": stats["completions_failed"],
        "states": counts,
        "peak_rss_mb": rss.peak_mb,
        "cpu_share": cpu.shares,
        "wal_bytes_per_job": round((enqueue_wal + drain_wal) / n, 1),
        "wal_bytes_per_job_enqueue": round(enqueue_wal / n, 1),
        "wal_bytes_per_job_drain": round(drain_wal / n, 1),
    }


async def _wal_lsn(conn: Any) -> str:
    return str(await conn.fetchval("SELECT CAST(pg_current_wal_insert_lsn() AS text)"))


async def _wal_since(conn: Any, lsn: str) -> int:
    return int(await conn.fetchval(
        "SELECT pg_wal_lsn_diff(pg_current_wal_insert_lsn(), CAST(CAST($1 AS text) AS pg_lsn))", lsn))
