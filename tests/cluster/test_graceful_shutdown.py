"""SIGTERM on a `jobwire serve` node with calls in flight: it drains within the grace,
abandons and re-enqueues what is left, forgets its heartbeat and exits 0; another node then
finishes the work."""

from __future__ import annotations

import asyncio
import signal
import time

import httpx
import pytest
from aiohttp import web

from tests.cluster.processes import connect, handler_server, serve, terminate, wait_for_line, wait_ready

pytestmark = pytest.mark.cluster


async def test_sigterm_drains_abandons_the_rest_and_another_node_finishes(tmp_path, fresh_database):
    url = await fresh_database()
    attempts: list[tuple[str, int]] = []

    async def handle(request: web.Request) -> web.Response:
        job = await request.json()
        attempts.append((job["execution_id"], job["attempt"]))
        await asyncio.sleep(0.2 if job["payload"]["quick"] else 5)
        return web.json_response({"result": "done"})

    runner, handler_url = await handler_server("/work", handle)

    env = {"JOBWIRE_DATABASE_URL": url, "JOBWIRE_POLL_INTERVAL": "0.2", "JOBWIRE_SHUTDOWN_GRACE": "1"}
    first, first_url = serve({**env, "JOBWIRE_NODE_NAME": "first"}, tmp_path / "first.log")
    conn = await connect(url)
    second = None
    try:
        await wait_ready(first_url, first, tmp_path / "first.log")
        async with httpx.AsyncClient(base_url=first_url, timeout=30) as api:
            assert (await api.put("/v1/handlers/w", json={"url": handler_url})).status_code == 201
            jobs = [{"handler": "w", "payload": {"quick": i < 2}} for i in range(6)]
            assert (await api.post("/v1/jobs/batch", json={"jobs": jobs})).status_code == 201
        for _ in range(100):
            if len(attempts) == 6:
                break
            await asyncio.sleep(0.05)
        assert len(attempts) == 6
        node_id = await conn.fetchval("SELECT server_id FROM job_server_heartbeats")

        started = time.monotonic()
        code = await asyncio.to_thread(terminate, first)  # the handler lives on this loop
        took = time.monotonic() - started
        assert code == 0, (tmp_path / "first.log").read_text()[-3000:]
        assert took < 4, f"shutdown took {took:.1f}s with a 1 s grace"

        states = dict(await conn.fetch("SELECT state, count(*) FROM job_executions GROUP BY state"))
        assert states == {"SUCCEEDED": 2, "ENQUEUED": 4}, states
        abandoned = await conn.fetch(
            "SELECT attempt, error_type FROM job_executions WHERE state = 'ENQUEUED'")
        assert {(r["attempt"], r["error_type"]) for r in abandoned} == {(1, "abandoned_shutdown")}
        assert await conn.fetchval("SELECT count(*) FROM job_server_heartbeats WHERE server_id = $1", node_id) == 0

        second, second_url = serve({**env, "JOBWIRE_NODE_NAME": "second"}, tmp_path / "second.log")
        await wait_ready(second_url, second, tmp_path / "second.log")
        for _ in range(300):
            if await conn.fetchval("SELECT count(*) FROM job_executions WHERE state = 'SUCCEEDED'") == 6:
                break
            await asyncio.sleep(0.1)
        assert dict(await conn.fetch("SELECT state, count(*) FROM job_executions GROUP BY state")) == {"SUCCEEDED": 6}
    finally:
        await conn.close()
        if first.poll() is None:
            terminate(first)
        if second is not None:
            terminate(second)
        await runner.cleanup()
    assert sorted(a for _, a in attempts) == [0] * 6 + [1] * 4


async def test_sigint_says_what_the_drain_waits_for_and_a_second_sigint_ends_the_wait(tmp_path, fresh_database):
    url = await fresh_database()
    arrived: list[str] = []
    release, finished = asyncio.Event(), asyncio.Event()

    async def handle(request: web.Request) -> web.Response:
        job = await request.json()
        arrived.append(job["execution_id"])
        # The quick call finishes when the test says so; the others outlast the grace.
        await (release if job["payload"]["quick"] else finished).wait()
        return web.json_response({"result": "done"})

    runner, handler_url = await handler_server("/work", handle)
    log = tmp_path / "node.log"
    env = {"JOBWIRE_DATABASE_URL": url, "JOBWIRE_POLL_INTERVAL": "0.2", "JOBWIRE_SHUTDOWN_GRACE": "60"}
    node, node_url = serve(env, log, log_level="info")
    conn = await connect(url)
    try:
        await wait_ready(node_url, node, log)
        async with httpx.AsyncClient(base_url=node_url, timeout=30) as api:
            assert (await api.put("/v1/handlers/w", json={"url": handler_url})).status_code == 201
            jobs = [{"handler": "w", "payload": {"quick": i == 0}} for i in range(3)]
            assert (await api.post("/v1/jobs/batch", json={"jobs": jobs})).status_code == 201
        for _ in range(200):
            if len(arrived) == 3:
                break
            await asyncio.sleep(0.05)
        assert len(arrived) == 3

        node.send_signal(signal.SIGINT)
        draining = await wait_for_line(log, "draining")
        assert "draining 3 calls, up to 60 s" in draining and "interrupt again" in draining
        release.set()
        assert "2 left" in await wait_for_line(log, "finished; 2 left")

        started = time.monotonic()
        node.send_signal(signal.SIGINT)  # a second Ctrl-C: stop waiting for the two slow calls
        code = await asyncio.to_thread(node.wait, 30)
        took = time.monotonic() - started
        assert code == 0, log.read_text()[-3000:]
        assert took < 20, f"the second interrupt did not end the 60 s wait ({took:.1f} s)"
        assert "interrupted again: abandoning 2 calls" in log.read_text()

        rows = await conn.fetch("SELECT state, attempt, error_type FROM job_executions ORDER BY state")
        assert sorted((r["state"], r["attempt"], r["error_type"]) for r in rows) == [
            ("ENQUEUED", 1, "abandoned_shutdown"), ("ENQUEUED", 1, "abandoned_shutdown"), ("SUCCEEDED", 0, None)]
        assert await conn.fetchval("SELECT count(*) FROM job_server_heartbeats") == 0
    finally:
        await conn.close()
        if node.poll() is None:
            node.kill()
            node.wait()
        finished.set()
        await runner.cleanup()
