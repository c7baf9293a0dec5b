"""`python -m bench`: the whole benchmark in one run (see bench/README.md)."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import shlex
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import aiohttp

from bench import drain, enqueue, latency, report
from bench.claim_cost import claim_cost
from bench.pg import Server
from bench.pgbench_limit import SCENARIOS, run_scenario
from bench.processes import start_handler, start_jobwire
from bench.stats import median_of, summarise
from bench.target import Target, register_handlers


SUMMARY_KEYS = {
    "enqueue_single": ["jobs_per_s", "client_cpu_share"],
    "enqueue_batch": ["jobs_per_s", "client_cpu_share"],
    "drain_sync": ["jobs_per_s", "seconds", "peak_rss_mb"],
    "drain_callback": ["jobs_per_s", "seconds", "peak_rss_mb"],
    "idle_latency": ["p50_ms", "p95_ms", "p99_ms", "max_ms"],
}
# The Jobwire steps --only can name (besides claim_cost and drain_rss), in the order they run.
STEPS = tuple(SUMMARY_KEYS)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m bench", description="Jobwire beside PgQueuer, Procrastinate and "
                                "PostgreSQL's own claim limit, in one run.")
    p.add_argument("--jobs", type=int, default=20_000, help="N for enqueue and drain measurements (default 20000)")
    p.add_argument("--runs", type=int, default=3, help="repetitions; every figure is their median (default 3)")
    p.add_argument("--out", default="bench-results.json", help="JSON results file (default bench-results.json)")
    p.add_argument("--database-url", default=os.environ.get("JOBWIRE_DATABASE_URL"),
                   help="an external PostgreSQL (default: JOBWIRE_DATABASE_URL, else an embedded one in a fresh "
                        "temporary directory)")
    p.add_argument("--concurrency", type=int, default=None, help="JOBWIRE_CONCURRENCY of the server (default: its own)")
    p.add_argument("--clients", type=int, default=16, help="concurrent clients of the single enqueue (default 16)")
    p.add_argument("--latency-jobs", type=int, default=500)
    p.add_argument("--rss-jobs", type=int, default=100_000,
                   help="one more sync drain of this many jobs for the RSS target (default 100000; 0: none)")
    p.add_argument("--claim-rows", type=int, default=1_000_000, help="the large claim-cost table (default 1000000)")
    p.add_argument("--claim-batch", type=int, default=64, help="jobs per timed claim (default 64)")
    p.add_argument("--claim-reps", type=int, default=200)
    p.add_argument("--pgbench-seconds", type=int, default=10)
    p.add_argument("--skip-peers", action="store_true", help="no PgQueuer, Procrastinate or pgbench")
    p.add_argument("--quick", action="store_true", help="a smoke run: 1 run, 1,000 jobs, small claim table")
    p.add_argument("--only", default=None,
                   help="comma-separated Jobwire steps to run (of: " + ", ".join(STEPS) + "); implies --skip-peers "
                        "and no claim-cost or RSS drain unless named")
    p.add_argument("--profile", metavar="DIR", default=None,
                   help="record the jobwire process with py-spy during each step (collapsed stacks per step in "
                        "DIR; needs py-spy)")
    args = p.parse_args(argv)
    if args.only:
        args.only = [s.strip() for s in args.only.split(",") if s.strip()]
        unknown = set(args.only) - set(STEPS) - {"claim_cost", "drain_rss"}
        if unknown:
            p.error(f"--only: unknown steps {sorted(unknown)}")
        args.skip_peers = True
    if args.quick:
        args.runs, args.jobs, args.latency_jobs, args.rss_jobs = 1, 1000, 50, 2000
        args.claim_rows, args.claim_reps, args.pgbench_seconds = 20_000, 20, 3
    return args


def log(msg: str) -> None:
    print(f"[bench {datetime.now().strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def wanted(args: argparse.Namespace, step: str) -> bool:
    return args.only is None or step in args.only


async def measure(server: Server, args: argparse.Namespace) -> tuple[dict[str, Any], dict[str, Any]]:
    """Jobwire's steps and the peers' runs, interleaved round by round, so a machine that speeds
    up or slows down during the benchmark moves both sides of a ratio alike; within a round the
    order alternates (Jobwire first in odd rounds, the peers first in even ones), so a drift
    inside a round does not favour whichever side always ran first."""
    if server.embedded:
        url, schema = await server.create_database("jobwire"), None
    else:
        url, schema = server.url, f"jobwire_bench_{server.tag}"
    peer_dsns = {} if args.skip_peers else {
        name: await server.create_database(name) for name in ("pgqueuer", "procrastinate", "pgbench")}
    handler = await start_handler()
    jobwire = await start_jobwire(url, schema, args.concurrency)
    t = Target(api=jobwire.url, handler=handler.url, dsn=url, schema=schema, jobwire_pid=jobwire.pid,
               handler_pid=handler.pid)
    runs: dict[str, list[dict]] = {}
    peer_runs: dict[str, dict[str, list[dict]]] = {}
    rss_run = None
    try:
        async with aiohttp.ClientSession() as http:
            await register_handlers(http, t)
        steps = {
            "enqueue_single": lambda r: enqueue.single(t, args.jobs, args.clients, r),
            "enqueue_batch": lambda r: enqueue.batch(t, args.jobs, 1000, r),
            "drain_sync": lambda r: drain.drain(t, "sync", args.jobs, r),
            "drain_callback": lambda r: drain.drain(t, "callback", args.jobs, r),
            "idle_latency": lambda r: latency.idle_latency(t, args.latency_jobs, r),
        }
        for run in range(1, args.runs + 1):
            peers_first = run % 2 == 0
            if peer_dsns and peers_first:
                await peers_round(server, peer_dsns, args, run, peer_runs)
            for name, step in steps.items():
                if not wanted(args, name):
                    continue
                with profiled(args.profile, jobwire.pid, f"{name}-{run}"):
                    res = await step(run)
                runs.setdefault(name, []).append(res)
                log(f"jobwire {name} run {run}: {json.dumps({k: v for k, v in res.items() if k != 'states'})}")
            if peer_dsns and not peers_first:
                await peers_round(server, peer_dsns, args, run, peer_runs)
        if args.rss_jobs and wanted(args, "drain_rss"):
            rss_run = await drain.drain(t, "sync", args.rss_jobs, 0)
            log(f"jobwire drain_rss: {json.dumps({k: v for k, v in rss_run.items() if k != 'states'})}")
    finally:
        jobwire.stop()
        handler.stop()
        if schema:
            await server.admin(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
    out: dict[str, Any] = {name: summarise(rs, SUMMARY_KEYS[name]) for name, rs in runs.items()}
    for mode in ("drain_sync", "drain_callback"):
        if mode in runs:
            out[mode]["lost_total"] = sum(r["lost"] for r in runs[mode])
            out[mode]["dispatched_twice_total"] = sum(r["dispatched_twice"] for r in runs[mode])
    peaks = [r["peak_rss_mb"] for m in ("drain_sync", "drain_callback") for r in runs.get(m, [])]
    out["peak_rss_mb"] = max(peaks) if peaks else None
    out["drain_rss"] = rss_run
    peers: dict[str, Any] = {"skipped": True} if not peer_dsns else {
        peer: {name: {"jobs_per_s": median_of(rs, "jobs_per_s"), "runs": rs} for name, rs in by_name.items()}
        for peer, by_name in peer_runs.items()}
    return out, peers


@contextmanager
def profiled(directory: str | None, pid: int, name: str) -> Iterator[None]:
    """py-spy, attached to `pid` for the duration of the block, without pausing it
    (--nonblocking: a sampler that stops the process would slow what it measures):
    DIR/name.txt, collapsed stacks (one line per distinct stack and its sample count; speedscope
    and flamegraph.pl read it)."""
    if directory is None:
        yield
        return
    Path(directory).mkdir(parents=True, exist_ok=True)
    idle = ["--idle"] if os.environ.get("BENCH_PROFILE_IDLE") else []  # samples of waiting threads too
    recorder = subprocess.Popen(["py-spy", "record", "--pid", str(pid), "--rate", "100", "--nonblocking", *idle,
                                 "--format", "raw", "--output", str(Path(directory) / f"{name}.txt")],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        yield
    finally:
        recorder.send_signal(signal.SIGINT)
        recorder.wait(60)


def run_peer(module: str, dsn: str, args: argparse.Namespace) -> dict[str, dict]:
    """One run of a peer (a subprocess of its own): {measure: result}."""
    cmd = [sys.executable, "-m", module, "--dsn", dsn, "--jobs", str(args.jobs), "--runs", "1",
           "--clients", str(args.clients)]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"{module} failed:\n{proc.stderr[-4000:]}")
    runs = json.loads(proc.stdout.strip().splitlines()[-1])
    return {name: rs[0] for name, rs in runs.items()}


async def peers_round(server: Server, dsns: dict[str, str], args: argparse.Namespace, run: int,
                      into: dict[str, dict[str, list[dict]]]) -> None:
    """Run `run` of each peer and of PostgreSQL's own limit, appended to `into`."""
    for name, module in (("pgqueuer", "bench.peers.pgqueuer_peer"),
                         ("procrastinate", "bench.peers.procrastinate_peer")):
        res = await asyncio.to_thread(run_peer, module, dsns[name], args)
        for measure, value in res.items():
            into.setdefault(name, {}).setdefault(measure, []).append(value)
        log(f"{name} run {run}: {json.dumps({k: v['jobs_per_s'] for k, v in res.items()})}")
    env = server.libpq_env(dsns["pgbench"])
    for scenario in SCENARIOS:
        res = await run_scenario(dsns["pgbench"], env, scenario, args.pgbench_seconds)
        into.setdefault("postgres", {}).setdefault(scenario, []).append(res)
        log(f"postgres {scenario} run {run}: {res['jobs_per_s']} jobs/s")


async def run(args: argparse.Namespace, argv: list[str]) -> dict[str, Any]:
    started = datetime.now(UTC)
    load_before = os.getloadavg()
    server = await asyncio.to_thread(Server.start, args.database_url)
    try:
        log(f"PostgreSQL: {'embedded' if server.embedded else 'external'}; Jobwire: {args.runs} run(s), N={args.jobs}")
        jobwire, peers = await measure(server, args)
        if wanted(args, "claim_cost"):
            log(f"claim cost: 1,000 vs {args.claim_rows:,} ENQUEUED rows, {args.claim_reps} claims of "
                f"{args.claim_batch}")
            jobwire["claim_cost"] = await claim_cost(await server.create_database("claim"), (1000, args.claim_rows),
                                                     args.claim_batch, args.claim_reps)
        conn_version = await _server_version(server)
    finally:
        await server.drop_all()
        await asyncio.to_thread(server.stop)
    result: dict[str, Any] = {
        "meta": {
            "started_at": started.isoformat(timespec="seconds"),
            "finished_at": datetime.now(UTC).isoformat(timespec="seconds"),
            "command": "python -m bench " + shlex.join(argv),
            "jobs": args.jobs, "runs": args.runs, "latency_jobs": args.latency_jobs, "rss_jobs": args.rss_jobs,
            "jobwire_concurrency": args.concurrency, "enqueue_clients": args.clients,
            "cpu_count": os.cpu_count(), "load_average_before": [round(x, 2) for x in load_before],
            "load_average_after": [round(x, 2) for x in os.getloadavg()],
            "database": "embedded" if server.embedded else "external", "postgres_version": conn_version,
            "python": platform.python_version(), "platform": platform.platform(),
        },
        "jobwire": jobwire,
        "peers": peers,
    }
    result["ratios"] = report.ratios(result)
    result["targets"] = report.targets(result)
    return result


async def _server_version(server: Server) -> str:
    import asyncpg

    conn = await asyncpg.connect(server.url)
    try:
        return await conn.fetchval("SHOW server_version")
    finally:
        await conn.close()


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    args = parse_args(argv)
    import uvloop

    result = uvloop.run(run(args, argv))
    Path(args.out).write_text(json.dumps(result, indent=1, default=str))
    print(report.table(result))
    m = result["meta"]
    print(f"\n{m['cpu_count']} cores; load average {m['load_average_before']} before, {m['load_average_after']} "
          f"after; PostgreSQL {m['postgres_version']} ({m['database']}); results in {args.out}")
