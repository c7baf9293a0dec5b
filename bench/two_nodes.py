"""two_nodes: two `jobwire serve` processes on one database beside one, side by side in one run
(issue 26: two nodes drain ≥ 0.9× one node on a 2-core machine, no collapse, none dispatched twice).

On a database of its own, the sync drain of bench/drain.py (N jobs enqueued into a paused queue,
resumed, timed from the handler's first call until none is ENQUEUED or PROCESSING) with one node,
and with a second node started beside it (its own name, the same settings) for that drain and
stopped after; the two sides take turns run by run. The handler counts the calls of each
execution: with two nodes claiming from one backlog, a job dispatched by both shows as
dispatched twice. On two cores the nodes, PostgreSQL and the handler share the machine: the
figure shows that a second node costs no throughput (SKIP LOCKED claims do not collide), not
that it adds any.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from typing import Any

import aiohttp

from bench import drain
from bench.pg import Server
from bench.processes import Child, start_jobwire
from bench.target import Target, register_handlers

KEPT = ("jobs_per_s", "seconds", "lost", "dispatched_twice", "handler_received")


async def two_nodes(server: Server, n: int, runs: int, concurrency: int | None, handler: Child,
                    log: Callable[[str], None]) -> dict[str, Any]:
    dsn = await server.create_database("two_nodes")
    first = await start_jobwire(dsn, None, concurrency)
    t = Target(api=first.url, handler=handler.url, dsn=dsn, schema=None, jobwire_pid=first.pid,
               handler_pid=handler.pid)
    sides: dict[str, list[dict[str, Any]]] = {"one": [], "two": []}
    try:
        async with aiohttp.ClientSession() as http:
            await register_handlers(http, t)
        for run in range(1, runs + 1):
            for side in (("one", "two") if run % 2 else ("two", "one")):
                second = (await start_jobwire(dsn, None, concurrency, settings={"JOBWIRE_NODE_NAME": "bench-2"})
                          if side == "two" else None)
                try:
                    res = await drain.drain(t, "sync", n, run)
                finally:
                    if second is not None:
                        second.stop()
                sides[side].append({k: res[k] for k in KEPT})
                log(f"two_nodes run {run}, {side} node(s): {res['jobs_per_s']} jobs/s, lost {res['lost']}, "
                    f"dispatched twice {res['dispatched_twice']}")
    finally:
        first.stop()
        await server.drop_database(dsn)
    one = statistics.median(r["jobs_per_s"] for r in sides["one"])
    two = statistics.median(r["jobs_per_s"] for r in sides["two"])
    out = {
        "one": {"jobs_per_s": one, "runs": sides["one"]},
        "two": {"jobs_per_s": two, "runs": sides["two"]},
        "ratio_two_to_one": round(two / one, 3),
        "lost_total": sum(r["lost"] for rs in sides.values() for r in rs),
        "dispatched_twice_total": sum(r["dispatched_twice"] for rs in sides.values() for r in rs),
    }
    log(f"two_nodes: two {two} / one {one} jobs/s (× {out['ratio_two_to_one']}); lost {out['lost_total']}, "
        f"dispatched twice {out['dispatched_twice_total']}")
    return out
