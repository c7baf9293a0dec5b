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

from bench import baseline, drain, enqueue, latency, report, scale
from bench.pg import Server
from bench.pgbench_limit import SCENARIOS, run_scenario
from bench.processes import start_handler, start_jobwire
from bench.stats import median_of, summarise
from bench.target import Target, register_handlers


SUMMARY_KEYS = {
    "enqueue_single": ["jobs_per_s", "client_cpu_share"],
    "enqueue_batch": ["jobs_per_s", "client_cpu_share"],
    "drain_sync": ["jobs_per_s", "seconds", "peak_rss_mb", "wal_bytes_per_job"],
    "drain_callback": ["jobs_per_s", "seconds", "peak_rss_mb"],
    "drain_batch": ["jobs_per_s", "seconds", "peak_rss_mb"],
    "idle_latency": ["p50_ms", "p95_ms", "p99_ms", "max_ms"],
}
# The Jobwire steps --only can name (besides claim_cost and drain_rss), in the order they run.
STEPS = tuple(SUMMARY_KEYS)
# The scale steps (bench/scale.py), after the claim cost, each on databases and nodes of its own.
SCALE_STEPS = ("counts", "saturation", "drain_pruning", "claim_history", "flow", "events", "workflows",
               "dashboard", "two_nodes")


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
    p.add_argument("--counts-rows", type=int, default=1_000_000,
                   help="counts: SUCCEEDED rows of history (default 1000000)")
    p.add_argument("--counts-requests", type=int, default=200,
                   help="counts: requests per endpoint and database (default 200)")
    p.add_argument("--prune-rows", type=int, default=1_000_000,
                   help="drain_pruning: old SUCCEEDED rows the pruner deletes (default 1000000)")
    p.add_argument("--history-rows", type=int, default=10_000_000,
                   help="claim_history: SUCCEEDED rows of history (default 10000000)")
    p.add_argument("--history-backlog", type=int, default=1000,
                   help="claim_history: ENQUEUED rows beside the history (default 1000)")
    p.add_argument("--dashboard-requests", type=int, default=20,
                   help="dashboard: requests per page, with --history-rows rows of history (default 20)")
    p.add_argument("--skip-peers", action="store_true", help="no PgQueuer, Procrastinate or pgbench")
    p.add_argument("--skip-scale", action="store_true",
                   help="no scale steps (the usual steps and the peers only: about 10 minutes)")
    p.add_argument("--quick", action="store_true", help="a smoke run: 1 run, 1,000 jobs, small claim table")
    p.add_argument("--only", default=None,
                   help="comma-separated Jobwire steps to run (of: " + ", ".join(STEPS + SCALE_STEPS) +
                        ", claim_cost, drain_rss); implies --skip-peers")
    p.add_argument("--baseline", metavar="REF", default=None,
                   help="also run the commit REF (any git ref) from a worktree of its own, step by step beside the "
                        "current checkout, and compare every figure within noise; implies --skip-peers")
    p.add_argument("--profile", metavar="DIR", default=None,
                   help="record the jobwire process with py-spy during each step (collapsed stacks per step in "
                        "DIR; needs py-spy)")
    args = p.parse_args(argv)
    if args.only:
        args.only = [s.strip() for s in args.only.split(",") if s.strip()]
        unknown = set(args.only) - set(STEPS) - set(SCALE_STEPS) - {"claim_cost", "drain_rss"}
        if unknown:
            p.error(f"--only: unknown steps {sorted(unknown)}")
        args.skip_peers = True
        if args.baseline and set(args.only) & set(SCALE_STEPS):
            p.error("--baseline: the scale steps (" + ", ".join(SCALE_STEPS) + ") run on the current checkout only")
    if args.baseline:
        args.skip_peers = True
    if args.quick:
        args.runs, args.jobs, args.latency_jobs, args.rss_jobs = 1, 1000, 50, 2000
        args.claim_rows, args.claim_reps, args.pgbench_seconds = 20_000, 20, 3
        args.counts_rows, args.counts_requests, args.prune_rows, args.history_rows = 20_000, 20, 20_000, 20_000
        args.dashboard_requests = 5
    return args


def log(msg: str) -> None:
    print(f"[bench {datetime.now().strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def wanted(args: argparse.Namespace, step: str) -> bool:
    if step in SCALE_STEPS and (args.baseline or args.skip_scale):
        return False  # judged against their own targets, on the current checkout only
    return args.only is None or step in args.only


async def measure(server: Server, args: argparse.Namespace,
                  sides: list[baseline.Side]) -> tuple[dict[str, dict[str, Any]], dict[str, Any]]:
    """Jobwire's steps and the peers' runs, interleaved round by round, so a machine that speeds
    up or slows down during the benchmark moves both sides of a ratio alike; within a round the
    order alternates (Jobwire first in odd rounds, the peers first in even ones), so a drift
    inside a round does not favour whichever side always ran first.

    With --baseline, `sides` is the current checkout and the baseline, each a `jobwire serve` of
    its own on a database (or schema) of its own that its own code migrated; every step runs on
    both, one after the other (the current side first in odd rounds, the baseline first in even
    ones), and there are no peers. Returns ({side name: its figures}, the peers' figures)."""
    with_baseline = len(sides) > 1
    urls: dict[str, tuple[str, str | None]] = {}
    for side in sides:
        suffix = "" if side.name == "current" else "_baseline"
        if server.embedded:
            urls[side.name] = await server.create_database("jobwire" + suffix), None
        else:
            urls[side.name] = server.url, f"jobwire_bench_{server.tag}{suffix}"
    peer_dsns = {} if args.skip_peers else {
        name: await server.create_database(name) for name in ("pgqueuer", "procrastinate", "pgbench")}
    handler = await start_handler()  # one no-op handler (the harness's own code) serves both sides
    servers: dict[str, Any] = {}
    targets: dict[str, Target] = {}
    runs: dict[str, dict[str, list[dict]]] = {side.name: {} for side in sides}
    peer_runs: dict[str, dict[str, list[dict]]] = {}
    rss_runs: dict[str, dict | None] = {side.name: None for side in sides}
    batching: dict[str, bool] = {}
    try:
        for side in sides:  # the baseline's own `jobwire serve` migrates its database at start-up
            url, schema = urls[side.name]
            servers[side.name] = await start_jobwire(url, schema, args.concurrency,
                                                     side.root if with_baseline else None)
            targets[side.name] = Target(api=servers[side.name].url, handler=handler.url, dsn=url, schema=schema,
                                        jobwire_pid=servers[side.name].pid, handler_pid=handler.pid)
            async with aiohttp.ClientSession() as http:
                batching[side.name] = await register_handlers(http, targets[side.name])
        steps = {
            "enqueue_single": lambda t, r: enqueue.single(t, args.jobs, args.clients, r),
            "enqueue_batch": lambda t, r: enqueue.batch(t, args.jobs, 1000, r),
            "drain_sync": lambda t, r: drain.drain(t, "sync", args.jobs, r),
            "drain_callback": lambda t, r: drain.drain(t, "callback", args.jobs, r),
            "drain_batch": lambda t, r: drain.drain(t, "batch", args.jobs, r),
            "idle_latency": lambda t, r: latency.idle_latency(t, args.latency_jobs, r),
        }
        for run in range(1, args.runs + 1):
            peers_first = run % 2 == 0
            if peer_dsns and peers_first:
                await peers_round(server, peer_dsns, args, run, peer_runs)
            for name, step in steps.items():
                if not wanted(args, name):
                    continue
                for side in baseline.order(sides, run):
                    if name == "drain_batch" and not batching[side.name]:
                        continue  # a baseline before handler batching
                    prefix = f"{side.name}-" if with_baseline else ""
                    with profiled(args.profile, targets[side.name].jobwire_pid, f"{prefix}{name}-{run}"):
                        res = await step(targets[side.name], run)
                    runs[side.name].setdefault(name, []).append(res)
                    log(f"{side.label} {name} run {run}: "
                        f"{json.dumps({k: v for k, v in res.items() if k != 'states'})}")
            if peer_dsns and not peers_first:
                await peers_round(server, peer_dsns, args, run, peer_runs)
        if args.rss_jobs and wanted(args, "drain_rss"):
            for side in baseline.order(sides, args.runs + 1):
                rss_runs[side.name] = res = await drain.drain(targets[side.name], "sync", args.rss_jobs, 0)
                log(f"{side.label} drain_rss: {json.dumps({k: v for k, v in res.items() if k != 'states'})}")
    finally:
        for child in servers.values():
            child.stop()
        handler.stop()
        for _url, schema in urls.values():
            if schema:
                await server.admin(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
    figures = {side.name: summarise_side(runs[side.name], rss_runs[side.name]) for side in sides}
    peers: dict[str, Any] = {"skipped": True} if not peer_dsns else {
        peer: {name: {"jobs_per_s": median_of(rs, "jobs_per_s"), "runs": rs} for name, rs in by_name.items()}
        for peer, by_name in peer_runs.items()}
    if with_baseline:
        peers["reason"] = "--baseline: the current checkout against the baseline, no peers"
    return figures, peers


def summarise_side(runs: dict[str, list[dict]], rss_run: dict | None) -> dict[str, Any]:
    out: dict[str, Any] = {name: summarise(rs, SUMMARY_KEYS[name]) for name, rs in runs.items()}
    for mode in ("drain_sync", "drain_callback", "drain_batch"):
        if mode in runs:
            out[mode]["lost_total"] = sum(r["lost"] for r in runs[mode])
            out[mode]["dispatched_twice_total"] = sum(r["dispatched_twice"] for r in runs[mode])
    peaks = [r["peak_rss_mb"] for m in ("drain_sync", "drain_callback", "drain_batch") for r in runs.get(m, [])]
    out["peak_rss_mb"] = max(peaks) if peaks else None
    out["drain_rss"] = rss_run
    return out


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
    # The py-spy the bench extra installed beside this interpreter (a venv not activated has it
    # off PATH), else the one on PATH.
    beside = Path(sys.executable).parent / "py-spy"
    spy = str(beside) if beside.exists() else "py-spy"
    recorder = subprocess.Popen([spy, "record", "--pid", str(pid), "--rate", "100", "--nonblocking", *idle,
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
    base = None
    sides = [baseline.Side("current", baseline.CHECKOUT)]
    if args.baseline:
        base = await asyncio.to_thread(baseline.prepare, args.baseline, log)
        sides.append(base.side)
        log("--baseline: the peers are skipped; every Jobwire step runs on both sides, the current side first "
            "in odd rounds and the baseline first in even ones")
    server = await asyncio.to_thread(Server.start, args.database_url)
    try:
        log(f"PostgreSQL: {'embedded' if server.embedded else 'external'}; Jobwire: {args.runs} run(s), N={args.jobs}"
            + (f", against the baseline {args.baseline}" if base else ""))
        if any(wanted(args, step) for step in STEPS + ("drain_rss",)) or not args.skip_peers:
            figures, peers = await measure(server, args, sides)
        else:  # only claim_cost or scale steps: no node for the usual steps
            figures = {side.name: summarise_side({}, None) for side in sides}
            peers = {"skipped": True}
        if wanted(args, "claim_cost"):
            sizes = (1000, args.claim_rows)
            log(f"claim cost: 1,000 vs {args.claim_rows:,} ENQUEUED rows, {args.claim_reps} claims of "
                f"{args.claim_batch}" + (", each side in a worker of its own, block by block in turns" if base else ""))
            if base is None:
                from bench.claim_cost import claim_cost  # imports the current checkout's app.db

                figures["current"]["claim_cost"] = await claim_cost(await server.create_database("claim"), sizes,
                                                                    args.claim_batch, args.claim_reps)
            else:
                dsns = {side.name: await server.create_database("claim" + ("" if side.name == "current"
                                                                          else "_baseline")) for side in sides}
                claims = await baseline.claim_cost_sides(dsns, sides, sizes, args.claim_batch, args.claim_reps,
                                                         args.runs, log)
                for name, cc in claims.items():
                    figures[name]["claim_cost"] = cc
        if base is not None and args.only is None:
            log("--baseline: the scale steps (" + ", ".join(SCALE_STEPS) + ") are skipped")
        figures["current"].update(await scale.run_steps(server, args, [s for s in SCALE_STEPS if wanted(args, s)],
                                                        log))
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
            "claim_rows": args.claim_rows, "claim_batch": args.claim_batch, "claim_reps": args.claim_reps,
            "counts_rows": args.counts_rows, "counts_requests": args.counts_requests, "prune_rows": args.prune_rows,
            "history_rows": args.history_rows, "history_backlog": args.history_backlog,
            "dashboard_requests": args.dashboard_requests,
            "jobwire_concurrency": args.concurrency, "enqueue_clients": args.clients,
            "cpu_count": os.cpu_count(), "load_average_before": [round(x, 2) for x in load_before],
            "load_average_after": [round(x, 2) for x in os.getloadavg()],
            "database": "embedded" if server.embedded else "external", "postgres_version": conn_version,
            "python": platform.python_version(), "platform": platform.platform(),
        },
        "jobwire": figures["current"],
        "peers": peers,
    }
    result["ratios"] = report.ratios(result)
    result["targets"] = report.targets(result)
    if base is not None:
        result["baseline"] = {**base.describe(), "jobwire": figures["baseline"]}
        result["baseline"]["figures"] = baseline.compare(result)
        result["baseline"]["summary"] = baseline.tally(result["baseline"]["figures"])
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
    if "baseline" in result:
        print()
        print(baseline.table(result))
    m = result["meta"]
    print(f"\n{m['cpu_count']} cores; load average {m['load_average_before']} before, {m['load_average_after']} "
          f"after; PostgreSQL {m['postgres_version']} ({m['database']}); results in {args.out}")
