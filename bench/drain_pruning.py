"""drain_pruning: the sync drain of N jobs while the node's own pruner deletes a large backlog of
old SUCCEEDED rows, against the same drain on the same table with pruning off.

A template database is migrated and filled once: `rows` SUCCEEDED executions with their three
events each (bench/history.py), created 12 to 2 days ago, VACUUM ANALYZE. Every run gets a fresh
copy of it (CREATE DATABASE … TEMPLATE, file by file) and a `jobwire serve` of its own on it,
started after the copy, with JOBWIRE_PRUNE_INTERVAL=1 and
- "with": JOBWIRE_RETENTION_SUCCEEDED=86400 (one day: the whole history is due; the drain's own
  jobs are not), so the pruner starts on the backlog one second after the node starts and works
  through it in batches of 1,000, resting 3x each batch's time, through the enqueue and the drain;
- "without": JOBWIRE_RETENTION_SUCCEEDED=0 (SUCCEEDED rows are kept forever: no pruning).
On the "with" side the run waits until the pruner has deleted its first rows. Then the sync drain
of bench/drain.py (N jobs batch-enqueued into a paused queue, resumed, timed
from the handler's first call until none is ENQUEUED or PROCESSING). The history rows are counted
just before the queue is resumed and just after it is empty: the pruner's deletes during the
drain. The runs go in pairs, the order alternating (with first in odd pairs), each on its own copy.
A "with" run in which the pruner deleted nothing measured no pruning: it is left out of the
ratio, and the result says so.

Then one more copy, the pruner alone for `alone_seconds` (no drain): rows deleted per second and,
per pruned execution, PostgreSQL CPU and WAL bytes; and DROP TABLE job_events on it, timed the
same way (what dropping a partition would cost instead of deleting its rows)."""

from __future__ import annotations

import asyncio
import statistics
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import aiohttp
import asyncpg

from bench import drain, history
from bench.pg import Server
from bench.pgcost import PgMeter
from bench.processes import Child, start_jobwire
from bench.target import Target, register_handlers

SIDES = {
    "with": {"JOBWIRE_PRUNE_INTERVAL": "1", "JOBWIRE_RETENTION_SUCCEEDED": "86400"},
    "without": {"JOBWIRE_PRUNE_INTERVAL": "1", "JOBWIRE_RETENTION_SUCCEEDED": "0"},
}
HISTORY_OLDER_THAN_DAYS = 1.0  # history rows are 2 to 12 days old, a drain's rows are new


class _PrunedDuringDrain:
    """drain.drain's probe: the history rows just before the resume and just after the drain,
    and PostgreSQL's CPU and WAL over the drain (bench/pgcost.py)."""

    vacuum = False

    def __init__(self, conn: asyncpg.Connection, meter: PgMeter) -> None:
        self.conn, self.meter = conn, meter
        self.before: int | None = None
        self.after: int | None = None

    @asynccontextmanager
    async def window(self, phase: str) -> AsyncIterator[None]:
        if phase != "drain":
            yield
            return
        self.before = await history.count_history(self.conn, HISTORY_OLDER_THAN_DAYS)
        async with self.meter.window("drain"):
            yield
        self.after = await history.count_history(self.conn, HISTORY_OLDER_THAN_DAYS)


async def _pruner_started(conn: asyncpg.Connection, rows: int, timeout: float = 60) -> float | None:
    """Seconds until the node's pruner has deleted its first history rows (it starts one
    JOBWIRE_PRUNE_INTERVAL after the node), so the drain begins with the pruner at work; None
    when it has not within `timeout`."""
    started = time.monotonic()
    while time.monotonic() - started < timeout:
        if await history.count_history(conn, HISTORY_OLDER_THAN_DAYS) < rows:
            return round(time.monotonic() - started, 2)
        await asyncio.sleep(0.1)
    return None


@asynccontextmanager
async def _node_on_copy(server: Server, name: str, template: str, side: str,
                        concurrency: int | None = None) -> AsyncIterator[tuple[str, Child, asyncpg.Connection]]:
    """A fresh copy of the template, a node of `side`'s settings started on it and a connection to
    it: (dsn, node, connection); all three gone afterwards (stopping a node twice is harmless)."""
    dsn = await server.create_database(name, template=template)
    node = None
    conn = None
    try:
        node = await start_jobwire(dsn, None, concurrency, settings=SIDES[side])
        conn = await asyncpg.connect(dsn)
        yield dsn, node, conn
    finally:
        if conn is not None:
            await conn.close()
        if node is not None:
            node.stop()
        await server.drop_database(dsn)


async def _one_run(server: Server, template: str, side: str, jobs: int, rows: int, run: int, handler: Child,
                   concurrency: int | None) -> dict[str, Any]:
    async with _node_on_copy(server, f"prune_{side}_{run}", template, side, concurrency) as (dsn, node, conn):
        t = Target(api=node.url, handler=handler.url, dsn=dsn, schema=None, jobwire_pid=node.pid,
                   handler_pid=handler.pid)
        async with aiohttp.ClientSession() as http:
            await register_handlers(http, t)
        started = await _pruner_started(conn, rows) if side == "with" else None
        probe = _PrunedDuringDrain(conn, await PgMeter.connect(conn, jobwire=node.pid))
        res = await drain.drain(t, "sync", jobs, run, probe=probe, clear=False)
        res.pop("states", None)
        pg = probe.meter.phases.get("drain", {})
        res.update(
            side=side, run=run, pruner_started_after_s=started,
            history_rows=rows,
            pruned_before_drain=rows - probe.before,
            history_before_drain=probe.before, history_after_drain=probe.after,
            pruned_during_drain=probe.before - probe.after,
            pruned_per_s=round((probe.before - probe.after) / res["seconds"], 1) if res["seconds"] else None,
            postgres_cpu_s=pg.get("postgres_cpu_s"), wal_bytes=pg.get("wal_bytes"),
        )
        return res


async def _prune_alone(server: Server, template: str, rows: int, seconds: float) -> dict[str, Any]:
    """The pruner alone on a fresh copy (no drain): what it deletes per second and what each
    pruned execution (with its three events) costs PostgreSQL in CPU and WAL, over `seconds` once
    it has started; then, with the node stopped, DROP TABLE job_events (the events left), timed
    the same way: what a partition's drop costs beside deleting its rows."""
    async with _node_on_copy(server, "prune_alone", template, "with") as (_, node, conn):
        started = await _pruner_started(conn, rows)
        meter = await PgMeter.connect(conn, jobwire=node.pid)
        before = await history.count_history(conn, HISTORY_OLDER_THAN_DAYS)
        async with meter.window("prune"):
            await asyncio.sleep(seconds)
        after = await history.count_history(conn, HISTORY_OLDER_THAN_DAYS)
        node.stop()  # the drop is timed with the pruner gone
        events = await conn.fetchval("SELECT count(*) FROM job_events")
        events_mb = round(await conn.fetchval("SELECT pg_total_relation_size('job_events')") / 2**20, 1)
        async with meter.window("drop"):
            await conn.execute("DROP TABLE job_events")
    prune, drop = meter.phases["prune"], meter.phases["drop"]
    pruned = before - after
    cpu = prune.get("postgres_cpu_s")
    return {
        "pruner_started_after_s": started, "seconds": prune["seconds"], "pruned": pruned,
        "pruned_per_s": round(pruned / prune["seconds"], 1),
        "postgres_cpu_us_per_pruned_row": round(cpu / pruned * 1e6, 1) if cpu is not None and pruned else None,
        "wal_bytes_per_pruned_row": round(prune["wal_bytes"] / pruned, 1) if pruned else None,
        "postgres_cpu_share": round(cpu / prune["seconds"], 2) if cpu is not None else None,
        "drop_events_table": {"rows": events, "mb": events_mb, "seconds": drop["seconds"],
                              "wal_bytes": drop["wal_bytes"], "postgres_cpu_s": drop.get("postgres_cpu_s")},
        "phases": meter.phases,
    }


async def drain_pruning(server: Server, jobs: int, rows: int, runs: int, concurrency: int | None,
                        handler: Child, log: Callable[[str], None], alone_seconds: float = 10) -> dict[str, Any]:
    from app.db.migrate import upgrade_sync

    template = await server.create_database("prune_template")
    try:
        await asyncio.to_thread(upgrade_sync, template, None)
        conn = await asyncpg.connect(template)
        try:
            log(f"drain_pruning: a template of {rows:,} old SUCCEEDED rows with 3 events each")
            fill = await history.fill_history(conn, rows, oldest_days=12, newest_days=2, events=True, log=log)
        finally:
            await conn.close()
        by_side: dict[str, list[dict[str, Any]]] = {side: [] for side in SIDES}
        for run in range(1, runs + 1):
            order = ("with", "without") if run % 2 else ("without", "with")
            for side in order:
                res = await _one_run(server, template, side, jobs, rows, run, handler, concurrency)
                by_side[side].append(res)
                log(f"drain_pruning {side} run {run}: {res['jobs_per_s']} jobs/s, lost {res['lost']}, "
                    f"pruned {res['pruned_during_drain']:,} during the drain ({res['pruned_before_drain']:,} before)")
        alone = await _prune_alone(server, template, rows, alone_seconds)
        log(f"drain_pruning: the pruner alone deleted {alone['pruned']:,} rows in {alone['seconds']} s "
            f"({alone['postgres_cpu_us_per_pruned_row']} µs PostgreSQL CPU, {alone['wal_bytes_per_pruned_row']} WAL "
            f"bytes per row); DROP TABLE of {alone['drop_events_table']['rows']:,} events: "
            f"{alone['drop_events_table']['seconds']} s, {alone['drop_events_table']['wal_bytes']:,} WAL bytes")
    finally:
        await server.drop_database(template)
    out = summarise(by_side, fill, jobs, rows)
    out["pruner_alone"] = alone
    return out


def summarise(by_side: dict[str, list[dict[str, Any]]], fill: dict[str, Any], jobs: int, rows: int) -> dict[str, Any]:
    counted = [r for r in by_side["with"] if r["pruned_during_drain"] > 0]
    without = [r["jobs_per_s"] for r in by_side["without"]]
    out: dict[str, Any] = {
        "jobs": jobs, "history_rows": rows, "fill": fill, "interleaved": True,
        "with": {"jobs_per_s": statistics.median(r["jobs_per_s"] for r in counted) if counted else None,
                 "pruned_during_drain": [r["pruned_during_drain"] for r in by_side["with"]],
                 "runs": by_side["with"]},
        "without": {"jobs_per_s": statistics.median(without) if without else None,
                    "pruned_during_drain": [r["pruned_during_drain"] for r in by_side["without"]],
                    "runs": by_side["without"]},
        "with_runs_pruning_nothing": len(by_side["with"]) - len(counted),
    }
    out["pair_ratios"] = [round(a["jobs_per_s"] / b["jobs_per_s"], 2) if a["pruned_during_drain"] > 0 else None
                          for a, b in zip(by_side["with"], by_side["without"], strict=False)]
    # The target's figure: the median of the pairs' ratios (each pair ran back to back, so the
    # machine's drift over the step cancels within a pair, not across the medians of each side).
    counted_ratios = [r for r in out["pair_ratios"] if r is not None]
    out["ratio_with_to_without"] = round(statistics.median(counted_ratios), 2) if counted_ratios else None
    out["lost_total"] = sum(r["lost"] for rs in by_side.values() for r in rs)
    out["dispatched_twice_total"] = sum(r["dispatched_twice"] for rs in by_side.values() for r in rs)
    if out["with_runs_pruning_nothing"]:
        out["note"] = (f"{out['with_runs_pruning_nothing']} of {len(by_side['with'])} 'with' runs: the pruner deleted "
                       "nothing during the drain; left out of the ratio")
    return out
