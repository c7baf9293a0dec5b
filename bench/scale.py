"""The scale steps, after the usual ones, each on databases and `jobwire serve` processes of its
own (the usual steps' node is stopped by then, so each step has the server to itself):

- counts (bench/counts.py): GET /v1/queues and /metrics with --counts-rows finished rows, beside
  a database with none;
- saturation (bench/saturation.py): PostgreSQL CPU and WAL per job, sync and callback drains;
- drain_pruning (bench/drain_pruning.py): the sync drain with and without the node's pruner
  deleting --prune-rows old rows;
- claim_history (bench/claim_history.py): the claim with --history-rows finished rows, beside
  the same backlog with none;
- flow (bench/flow.py): a drain over 1,000 concurrency keys beside a plain one, the claim with
  10,000 keys due beside a plain backlog, a rate limit's measured rate;
- events (bench/events.py): the drain with a subscription to every event type beside one
  without, and how long after it the last event reached the subscriber;
- workflows (bench/workflows.py): a workflow 1 → 1,000 → 1 beside 1,002 independent jobs, and the
  database time of the transaction that ends a parent of 10,000 WAITING children;
- dashboard (bench/dashboard.py): each page of /ui with --history-rows rows of history;
- two_nodes (bench/two_nodes.py): the sync drain with two `jobwire serve` on one database beside one.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from bench.pg import Server
from bench.processes import start_handler


async def run_steps(server: Server, args: argparse.Namespace, steps: list[str],
                    log: Callable[[str], None]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if not steps:
        return out
    if "counts" in steps:
        from bench.counts import counts

        out["counts"] = res = await counts(server, args.counts_rows, args.counts_requests, log)
        log(f"counts: history {_brief(res['history'])}; empty {_brief(res['empty'])}")
    handler = (await start_handler()
               if {"saturation", "drain_pruning", "flow", "events", "workflows", "two_nodes"} & set(steps) else None)
    try:
        if "saturation" in steps:
            from bench.saturation import saturation

            out["saturation"] = await saturation(server, args.jobs, args.runs, args.concurrency, handler, log)
        if "drain_pruning" in steps:
            from bench.drain_pruning import drain_pruning

            out["drain_pruning"] = res = await drain_pruning(server, args.jobs, args.prune_rows, args.runs,
                                                             args.concurrency, handler, log,
                                                             alone_seconds=2 if args.quick else 10)
            log(f"drain_pruning: with {res['with']['jobs_per_s']} / without {res['without']['jobs_per_s']} jobs/s "
                f"(× {res['ratio_with_to_without']}); pruned during the drains {res['with']['pruned_during_drain']}")
        if "flow" in steps:
            from bench.flow import flow

            assert handler is not None
            out["flow"] = await flow(server, args.jobs, args.runs, args.concurrency, handler, args.claim_batch,
                                     args.claim_reps, log, keys=1_000 if args.quick else 10_000)
        if "events" in steps:
            from bench.events import events

            assert handler is not None
            out["events"] = await events(server, args.jobs, args.runs, args.concurrency, handler, log)
        if "workflows" in steps:
            from bench.workflows import workflows

            assert handler is not None
            out["workflows"] = await workflows(server, args.runs, args.concurrency, handler, log,
                                               repeats=1 if args.quick else 5,
                                               children=1_000 if args.quick else 10_000)
        if "two_nodes" in steps:
            from bench.two_nodes import two_nodes

            assert handler is not None
            out["two_nodes"] = await two_nodes(server, args.jobs, args.runs, args.concurrency, handler, log)
    finally:
        if handler is not None:
            handler.stop()
    if "claim_history" in steps:
        from bench.claim_history import claim_history

        dsn = await server.create_database("claim_history")
        try:
            out["claim_history"] = res = await claim_history(dsn, args.history_rows, args.history_backlog,
                                                             args.claim_batch, args.claim_reps, log)
        finally:
            await server.drop_database(dsn)
        sizes = res["sizes"]
        log(f"claim_history: median {sizes['0']['median_ms']} ms with no history, "
            f"{sizes[str(args.history_rows)]['median_ms']} ms with {args.history_rows:,} rows "
            f"(× {res['ratio_large_to_small']})")
    if "dashboard" in steps:
        from bench.dashboard import dashboard

        out["dashboard"] = res = await dashboard(server, args.history_rows, args.dashboard_requests, log)
        log(f"dashboard: slowest page {res['slowest']['page']} p50 {res['slowest']['p50_ms']} ms with "
            f"{args.history_rows:,} rows of history (target ≤ {res['target_p50_ms']:.0f} ms: "
            f"{'met' if res['met'] else 'NOT met'}); not 200: {res['not_200'] or 'none'}")
    return out


def _brief(side: dict[str, Any]) -> str:
    return ", ".join(f"{e} p50 {side[e]['p50_ms']} ms" for e in ("queues", "metrics"))
