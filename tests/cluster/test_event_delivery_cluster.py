"""Event deliveries from two `jobwire serve` nodes on one database to one real subscriber: every
event arrives, none twice while both nodes live; when a node is killed with SIGKILL while it sends,
the deliveries it held are sent again by the other once their lease runs out, and only those may
arrive twice (at least once)."""

from __future__ import annotations

import asyncio
import collections
import signal
import time

import httpx
import pytest
from aiohttp import web

from tests.cluster.processes import connect, handler_server, serve_nodes, terminate, wait_all_ready

pytestmark = pytest.mark.cluster


async def test_two_nodes_deliver_every_event_and_a_killed_nodes_deliveries_are_sent_again(tmp_path, fresh_database):
    url = await fresh_database()
    arrivals: list[tuple[float, str]] = []  # (time, webhook-id)
    slow = {"on": False}
    open_now = {"n": 0}

    async def job(request: web.Request) -> web.Response:
        return web.json_response({"result": (await request.json())["payload"]})

    async def subscriber(request: web.Request) -> web.Response:
        await request.read()
        arrivals.append((time.monotonic(), request.headers["webhook-id"]))
        open_now["n"] += 1
        try:
            if slow["on"]:
                await asyncio.sleep(3)
        finally:
            open_now["n"] -= 1
        return web.Response(status=204)

    handler_runner, handler_url = await handler_server("/job", job)
    subscriber_runner, subscriber_url = await handler_server("/events", subscriber)
    env = {"JOBWIRE_DATABASE_URL": url, "JOBWIRE_POLL_INTERVAL": "0.2", "JOBWIRE_CONCURRENCY": "8",
           "JOBWIRE_EVENT_CONCURRENCY": "4", "JOBWIRE_HEARTBEAT_INTERVAL": "0.5"}
    nodes = serve_nodes(("alpha", "bravo"), env, tmp_path)
    conn = None
    try:
        await wait_all_ready(nodes)
        conn = await connect(url)
        async with httpx.AsyncClient(base_url=nodes[0][1], timeout=30) as api:
            assert (await api.put("/v1/handlers/h", json={"url": handler_url})).status_code == 201
            assert (await api.put("/v1/subscriptions/s", json={"url": subscriber_url})).status_code == 201

            async def succeeded_events(total: int) -> set[str]:
                for _ in range(1200):
                    ids = {str(r["id"]) for r in await conn.fetch(
                        "SELECT id FROM job_events WHERE type = 'execution.succeeded'")}
                    if len(ids) >= total:
                        return ids
                    await asyncio.sleep(0.05)
                raise AssertionError("the jobs did not all succeed")

            async def arrived(ids: set[str], timeout: float) -> None:
                deadline = time.monotonic() + timeout
                while not ids <= {i for _, i in arrivals}:
                    assert time.monotonic() < deadline, f"{len(ids - {i for _, i in arrivals})} events never arrived"
                    await asyncio.sleep(0.1)

            # Both nodes live: every event once.
            jobs = [{"handler": "h", "payload": {"i": i}} for i in range(200)]
            assert (await api.post("/v1/jobs/batch", json={"jobs": jobs})).status_code == 201
            first = await succeeded_events(200)
            await arrived(first, 30)
            await asyncio.sleep(1)
            counts = collections.Counter(i for _, i in arrivals)
            assert set(counts) == first and set(counts.values()) == {1}

            # A node dies while it sends: its deliveries come again from the other, after their lease.
            slow["on"] = True
            jobs = [{"handler": "h", "payload": {"i": i}} for i in range(200, 240)]
            assert (await api.post("/v1/jobs/batch", json={"jobs": jobs})).status_code == 201
            second = (await succeeded_events(240)) - first
            for _ in range(200):
                if open_now["n"] >= 6:  # both nodes hold deliveries (4 slots each)
                    break
                await asyncio.sleep(0.05)
            killed_at = time.monotonic()
            open_at_kill = {i for t, i in arrivals if t <= killed_at and i in second}
            nodes[1][0].send_signal(signal.SIGKILL)
            nodes[1][0].wait(10)
            slow["on"] = False
            await arrived(second, 30)
            # The dead node's deliveries stay leased until their lease runs out; then the other sends them.
            deadline = time.monotonic() + 90
            while await conn.fetchval("SELECT count(*) FROM job_event_deliveries WHERE status <> 'delivered'"):
                assert time.monotonic() < deadline, "deliveries left undelivered after the lease"
                await asyncio.sleep(0.2)
            twice = {i for i, n in collections.Counter(i for _, i in arrivals if i in second).items() if n > 1}
            assert twice and twice <= open_at_kill  # sent again: only what was being sent when the node died
            assert await conn.fetchval("SELECT count(*) FROM job_event_deliveries") == 240
    finally:
        if conn is not None:
            await conn.close()
        codes = [terminate(p) for p, _, _ in nodes[:1]]
        await handler_runner.cleanup()
        await subscriber_runner.cleanup()
    assert codes == [0]
