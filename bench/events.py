"""events: what an event subscription costs the drain (issue 23), side by side in one run.

The sync drain of bench/drain.py on one `jobwire serve` of its own, with no subscription, and with
one subscription to every event type delivered to a no-op subscriber served by this process (it
answers 204 and notes when each event id arrived), the two taking turns run by run. Each drain is
timed to the last job's completion, as bench/drain.py does (target: subscribed ≥ 0.8× plain); then
the subscriber's arrivals are awaited (the drain's rows kept until then), and the lag of the last
one after the drain's end is reported (target: every event within 30 s).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

import aiohttp
from aiohttp import web

from bench import drain, jobwire_db
from bench.pg import Server
from bench.processes import Child, start_jobwire
from bench.target import Target, expect, register_handlers

SUBSCRIPTION = "bench-events"
WAIT_FOR_EVENTS = 120.0


class Subscriber:
    """A no-op subscriber on loopback: answers 204, notes the first arrival of each event id."""

    def __init__(self) -> None:
        self.arrived: dict[str, float] = {}
        self.requests = 0
        self.runner: web.AppRunner | None = None
        self.url = ""

    async def start(self) -> None:
        async def receive(request: web.Request) -> web.StreamResponse:
            await request.read()
            self.requests += 1
            self.arrived.setdefault(request.headers.get("webhook-id", ""), time.time())
            return web.Response(status=204)

        app = web.Application()
        app.router.add_post("/events", receive)
        self.runner = web.AppRunner(app, access_log=None)
        await self.runner.setup()
        site = web.TCPSite(self.runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        self.url = f"http://127.0.0.1:{port}/events"

    async def stop(self) -> None:
        if self.runner is not None:
            await self.runner.cleanup()


async def _subscribed_drain(t: Target, sub: Subscriber, n: int, run: int) -> dict[str, Any]:
    async with aiohttp.ClientSession() as http:
        async with http.put(f"{t.api}/v1/subscriptions/{SUBSCRIPTION}", json={"url": sub.url}) as r:
            await expect(r, 201)
    sub.arrived.clear()
    sub.requests = 0
    res = await drain.drain(t, "sync", n, run, clear=False)  # its events stay until they are delivered
    drained = time.time()
    deadline = time.monotonic() + WAIT_FOR_EVENTS
    while len(sub.arrived) < res["succeeded"] and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    last = max(sub.arrived.values(), default=drained)
    conn = await jobwire_db.connect(t.dsn, t.schema)
    try:
        await jobwire_db.clear_queue(conn, f"bench-drain-sync-{run}")
    finally:
        await conn.close()
    async with aiohttp.ClientSession() as http:
        async with http.delete(f"{t.api}/v1/subscriptions/{SUBSCRIPTION}") as r:
            if r.status != 204:
                raise RuntimeError(f"DELETE {r.url} → {r.status}: {await r.text()}")
    return {"jobs_per_s": res["jobs_per_s"], "seconds": res["seconds"], "lost": res["lost"],
            "dispatched_twice": res["dispatched_twice"], "events_delivered": len(sub.arrived),
            "deliveries_received": sub.requests, "last_event_after_drain_s": round(max(0.0, last - drained), 3)}


async def events(server: Server, n: int, runs: int, concurrency: int | None, handler: Child,
                 log: Callable[[str], None]) -> dict[str, Any]:
    dsn = await server.create_database("events")
    node = await start_jobwire(dsn, None, concurrency)
    t = Target(api=node.url, handler=handler.url, dsn=dsn, schema=None, jobwire_pid=node.pid, handler_pid=handler.pid)
    sub = Subscriber()
    await sub.start()
    plain: list[dict[str, Any]] = []
    subscribed: list[dict[str, Any]] = []
    try:
        async with aiohttp.ClientSession() as http:
            await register_handlers(http, t)
        for run in range(1, runs + 1):
            for side in (("plain", "subscribed") if run % 2 else ("subscribed", "plain")):
                if side == "plain":
                    res = await drain.drain(t, "sync", n, run)
                    plain.append({k: v for k, v in res.items() if k in ("jobs_per_s", "seconds", "lost",
                                                                        "dispatched_twice")})
                else:
                    subscribed.append(res := await _subscribed_drain(t, sub, n, run))
                log(f"events drain {side} run {run}: {res['jobs_per_s']} jobs/s"
                    + (f", {res['events_delivered']} events, the last {res['last_event_after_drain_s']} s after"
                       if side == "subscribed" else ""))
    finally:
        await sub.stop()
        node.stop()
        await server.drop_database(dsn)
    plain_rate = _median([r["jobs_per_s"] for r in plain])
    subscribed_rate = _median([r["jobs_per_s"] for r in subscribed])
    out = {
        "plain": {"jobs_per_s": plain_rate, "runs": plain},
        "subscribed": {"jobs_per_s": subscribed_rate, "runs": subscribed},
        "ratio_subscribed_to_plain": round(subscribed_rate / plain_rate, 3),
        "last_event_after_drain_s": max(r["last_event_after_drain_s"] for r in subscribed),
        "every_event_delivered": all(r["events_delivered"] >= n - r["lost"] for r in subscribed),
    }
    log(f"events: subscribed {subscribed_rate} / plain {plain_rate} jobs/s (× {out['ratio_subscribed_to_plain']}); "
        f"last event {out['last_event_after_drain_s']} s after its drain")
    return out


def _median(values: list[float]) -> float:
    ordered = sorted(values)
    middle = len(ordered) // 2
    return ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2
