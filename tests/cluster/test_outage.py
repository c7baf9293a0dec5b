"""An outage is not a massacre: two `jobwire serve` nodes lose the database (a TCP proxy in front
of it is cut) for twice the heartbeat timeout while slow calls are in flight on both. When it
comes back every heartbeat row is stale, yet neither node declares the other dead: every job
succeeds, none is dispatched twice, both nodes stay alive with their heartbeat rows."""

from __future__ import annotations

import asyncio
import collections
import time

import httpx
import pytest
from aiohttp import web

from tests.cluster.processes import connect, handler_server, serve_nodes, terminate, wait_all_ready
from tests.cluster.proxy import CuttableProxy

pytestmark = pytest.mark.cluster

HEARTBEAT_TIMEOUT = 3.0  # a loaded machine (the suite runs in parallel) may delay a heartbeat by a second
OUTAGE = 2 * HEARTBEAT_TIMEOUT
JOBS = 8


async def test_a_database_outage_longer_than_the_heartbeat_timeout_abandons_nothing(
        tmp_path, fresh_database, server_url):
    url = await fresh_database()
    proxy = CuttableProxy(url)
    await proxy.start()
    calls: collections.Counter[str] = collections.Counter()
    started: set[str] = set()

    async def slow(request: web.Request) -> web.Response:
        job = await request.json()
        calls[job["execution_id"]] += 1
        started.add(job["execution_id"])
        await asyncio.sleep(OUTAGE + 4)  # in flight before, during and after the outage
        return web.json_response({"result": {"attempt": job["attempt"]}})

    runner, handler_url = await handler_server("/slow", slow)
    env = {
        "JOBWIRE_DATABASE_URL": proxy.url,
        "JOBWIRE_CONCURRENCY": str(JOBS // 2),  # so both nodes hold calls
        "JOBWIRE_POLL_INTERVAL": "0.2",
        # Heartbeats half a timeout apart, scans far more often: when the database comes back,
        # a node scans well before the other has written its next heartbeat.
        "JOBWIRE_HEARTBEAT_INTERVAL": str(HEARTBEAT_TIMEOUT / 2),
        "JOBWIRE_HEARTBEAT_TIMEOUT": str(HEARTBEAT_TIMEOUT),
        "JOBWIRE_SCAN_INTERVAL": "0.1",
        "JOBWIRE_EXECUTION_TIMEOUT": "60",
    }
    nodes = serve_nodes(("alpha", "bravo"), env, tmp_path)
    conn = await connect(url)  # straight to the database, past the proxy
    codes: list[int] = []
    states: dict[str, int] = {}
    try:
        await wait_all_ready(nodes)
        async with httpx.AsyncClient(base_url=nodes[0][1], timeout=30) as api:
            assert (await api.put("/v1/handlers/slow", json={"url": handler_url})).status_code == 201
            jobs = [{"handler": "slow", "payload": {"i": i}} for i in range(JOBS)]
            assert (await api.post("/v1/jobs/batch", json={"jobs": jobs})).status_code == 201
            for _ in range(200):
                if len(started) == JOBS:
                    break
                await asyncio.sleep(0.05)
            holders = dict(await conn.fetch("SELECT locked_by, count(*) FROM job_executions "
                                            "WHERE state = 'PROCESSING' GROUP BY locked_by"))
            assert len(holders) == 2, f"calls should be in flight on both nodes: {holders}"
            # Long enough connected that a node may judge others, as in steady operation.
            await asyncio.sleep(HEARTBEAT_TIMEOUT)

            proxy.sever()
            await asyncio.sleep(OUTAGE)
            stale = await conn.fetchval("SELECT count(*) FROM job_server_heartbeats "
                                        "WHERE last_heartbeat < now() - make_interval(secs => $1)",
                                        HEARTBEAT_TIMEOUT)
            assert stale == 2, "both heartbeat rows are stale when the database comes back"
            proxy.restore()

            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                states = dict(await conn.fetch("SELECT state, count(*) FROM job_executions GROUP BY state"))
                if states == {"SUCCEEDED": JOBS}:
                    break
                await asyncio.sleep(0.2)
            abandoned = await conn.fetchval("SELECT count(*) FROM job_events WHERE event->>'new_state' = 'ABANDONED'")
            await asyncio.sleep(HEARTBEAT_TIMEOUT + 1)  # past the rule's wait: still nobody judged dead
            alive = {p.poll() is None for p, _, _ in nodes}
            rows = await conn.fetchval("SELECT count(*) FROM job_server_heartbeats")
            fresh = await conn.fetchval("SELECT count(*) FROM job_server_heartbeats "
                                        "WHERE last_heartbeat >= now() - make_interval(secs => $1)",
                                        HEARTBEAT_TIMEOUT)
    finally:
        await conn.close()
        # In a thread: the handler replying to a node's last calls runs on this event loop.
        codes = list(await asyncio.gather(*(asyncio.to_thread(terminate, p) for p, _, _ in nodes)))
        await runner.cleanup()
        await proxy.stop()
    logs = "\n".join(log.read_text()[-2000:] for _, _, log in nodes)
    assert states == {"SUCCEEDED": JOBS}, f"{states}\n{logs}"
    assert abandoned == 0, f"{abandoned} attempts abandoned after the outage\n{logs}"
    assert max(calls.values()) == 1 and len(calls) == JOBS, f"dispatched twice: {calls}"
    assert alive == {True} and rows == 2 and fresh == 2, f"{rows} heartbeat rows, {fresh} fresh\n{logs}"
    assert codes == [0, 0], logs
