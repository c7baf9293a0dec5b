"""saturation: what a job costs PostgreSQL, for docs/scaling.md: CPU seconds of the server's
processes per 1,000 jobs and WAL bytes per job (bench/pgcost.py), with Jobwire's and the
handler's CPU beside them.

On a database of its own (no history) with one `jobwire serve` (its defaults), each run does
the sync drain and the callback drain of bench/drain.py (the order alternating run by run), each
of N jobs, in windows:
- enqueue: the N jobs batch-enqueued (POST /v1/jobs/batch, 1,000 a call) into a paused queue;
- drain: resumed until none is ENQUEUED or PROCESSING (the drain alone);
- vacuum: VACUUM of job_executions and job_events right after (the dead row versions the drain
  left; autovacuum's work, which a steady load pays too);
and one more window per run, enqueue_single: N/4 jobs as single POST /v1/jobs from 16 clients
into a paused queue (deleted afterwards).
Reported per mode: the drain alone, enqueue + drain, and enqueue + drain + vacuum, as PostgreSQL
CPU seconds per 1,000 jobs (= CPU ms per job) and WAL bytes per job (median of the runs), with
pg_waldump's record count and full-page-image share where it can read the WAL; and what those
imply: jobs/s per PostgreSQL core when the CPU binds, and the WAL MB/s at that rate."""

from __future__ import annotations

import statistics
from collections.abc import Callable
from typing import Any

import aiohttp
import asyncpg

from bench import drain, jobwire_db
from bench.pg import Server
from bench.pgcost import PgMeter, per_job
from bench.processes import Child, start_jobwire
from bench.target import Target, enqueue_singly, register_handlers, set_paused

COMBINATIONS = {
    "drain": ("drain",),
    "enqueue_drain": ("enqueue", "drain"),
    "enqueue_drain_vacuum": ("enqueue", "drain", "vacuum"),
    "vacuum": ("vacuum",),
    "enqueue": ("enqueue",),
}
PER_JOB_KEYS = ("postgres_cpu_s_per_1000_jobs", "jobwire_cpu_s_per_1000_jobs", "handler_cpu_s_per_1000_jobs",
                "wal_bytes_per_job", "wal_records_per_job", "wal_fpi_share")


async def _single_enqueue(t: Target, conn: asyncpg.Connection, n: int, run: int, clients: int = 16) -> dict[str, Any]:
    queue = f"bench-saturation-single-{run}"
    per = max(1, n // clients)
    meter = await PgMeter.connect(conn, jobwire=t.jobwire_pid)
    try:
        async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=clients)) as http:
            await set_paused(http, t, queue, True)
            async with meter.window("enqueue_single"):
                await enqueue_singly(http, t, queue, per, clients)
    finally:
        await jobwire_db.clear_queue(conn, queue)
    return {"jobs": per * clients, "phases": meter.phases,
            "per_job": per_job(meter.phases, ("enqueue_single",), per * clients)}


def _median(values: list[Any]) -> Any:
    values = [v for v in values if v is not None]
    return round(statistics.median(values), 3) if values else None


def _implied(figures: dict[str, Any]) -> dict[str, Any]:
    """What one PostgreSQL core carries when its CPU binds, and the WAL that rate writes."""
    cpu = figures.get("postgres_cpu_s_per_1000_jobs")
    wal = figures.get("wal_bytes_per_job")
    if not cpu:
        return {}
    per_core = 1000 / cpu
    return {"jobs_per_s_per_postgres_core": round(per_core), "wal_mb_per_s_per_core": round(per_core * wal / 1e6, 2)}


async def saturation(server: Server, jobs: int, runs: int, concurrency: int | None, handler: Child,
                     log: Callable[[str], None]) -> dict[str, Any]:
    dsn = await server.create_database("saturation")
    node = await start_jobwire(dsn, None, concurrency)
    conn = await asyncpg.connect(dsn)
    by_mode: dict[str, list[dict[str, Any]]] = {"sync": [], "callback": [], "enqueue_single": []}
    try:
        t = Target(api=node.url, handler=handler.url, dsn=dsn, schema=None, jobwire_pid=node.pid,
                   handler_pid=handler.pid)
        async with aiohttp.ClientSession() as http:
            await register_handlers(http, t)
        meter0 = await PgMeter.connect(conn)
        for run in range(1, runs + 1):
            for mode in (("sync", "callback") if run % 2 else ("callback", "sync")):
                meter = await PgMeter.connect(conn, jobwire=node.pid, handler=handler.pid)
                meter.vacuum = True  # drain.drain times a VACUUM after the drain too
                res = await drain.drain(t, mode, jobs, run, probe=meter)
                res.pop("states", None)
                res["phases"] = meter.phases
                res["per_job"] = {name: per_job(meter.phases, phases, jobs) for name, phases in COMBINATIONS.items()}
                by_mode[mode].append(res)
                d = res["per_job"]["drain"]
                log(f"saturation {mode} run {run}: {res['jobs_per_s']} jobs/s; drain alone: PostgreSQL "
                    f"{d.get('postgres_cpu_s_per_1000_jobs')} CPU s per 1,000 jobs, {d.get('wal_bytes_per_job')} "
                    f"WAL bytes per job")
            single = await _single_enqueue(t, conn, max(16, jobs // 4), run)
            by_mode["enqueue_single"].append(single)
            log(f"saturation enqueue_single run {run}: {single['per_job']}")
    finally:
        await conn.close()
        node.stop()
        await server.drop_database(dsn)
    out: dict[str, Any] = {"jobs": jobs, "runs_per_mode": runs, "cpu_measured": meter0.postmaster is not None,
                           "waldump": meter0.waldump is not None}
    for mode in ("sync", "callback"):
        rs = by_mode[mode]
        summary: dict[str, Any] = {"jobs_per_s": _median([r["jobs_per_s"] for r in rs]),
                                   "lost_total": sum(r["lost"] for r in rs),
                                   "dispatched_twice_total": sum(r["dispatched_twice"] for r in rs)}
        for name in COMBINATIONS:
            figures = {key: _median([r["per_job"][name].get(key) for r in rs]) for key in PER_JOB_KEYS}
            summary[name] = {**figures, **_implied(figures)}
        summary["runs"] = rs
        out[mode] = summary
    singles = by_mode["enqueue_single"]
    figures = {key: _median([r["per_job"].get(key) for r in singles]) for key in PER_JOB_KEYS}
    out["enqueue_single"] = {"jobs": singles[0]["jobs"] if singles else 0, **figures, **_implied(figures),
                             "runs": singles}
    return out
