"""Real `jobwire serve` processes: the quick start on its embedded PostgreSQL, and two nodes
sharing one database draining 10,000 jobs with none lost and none dispatched twice."""

from __future__ import annotations

import asyncio
import collections
import time
from typing import Any

import httpx
import pytest
from aiohttp import web

from tests.cluster.processes import connect, handler_server, serve, serve_nodes, terminate, wait_all_ready, wait_ready

pytestmark = pytest.mark.cluster


async def test_quick_start_serves_on_its_embedded_postgres_and_stops_it(tmp_path):
    log = tmp_path / "serve.log"
    process, url = serve({"JOBWIRE_DATA_DIR": str(tmp_path / "data")}, log)
    try:
        await wait_ready(url, process, log)
        async with httpx.AsyncClient(base_url=url) as client:
            assert (await client.get("/healthz")).json() == {"status": "ok"}
    finally:
        code = terminate(process)
    assert code == 0, log.read_text()
    assert not (tmp_path / "data" / "pg" / "postmaster.pid").exists(), "embedded PostgreSQL still running"


async def test_two_nodes_drain_10000_jobs_none_lost_none_dispatched_twice(tmp_path, fresh_database):
    url = await fresh_database()
    seen: collections.Counter[str] = collections.Counter()
    accepted: list[dict[str, Any]] = []

    async def handle(request: web.Request) -> web.Response:
        job = await request.json()
        seen[request.headers["webhook-id"]] += 1
        if job["payload"]["i"] % 10 == 0:  # one in ten answers 202 and completes by callback
            accepted.append(job)
            return web.Response(status=202)
        return web.json_response({"result": job["payload"]["i"]})

    runner, handler_url = await handler_server("/work", handle)

    env = {"JOBWIRE_DATABASE_URL": url, "JOBWIRE_POLL_INTERVAL": "0.2"}
    nodes = serve_nodes(("node-a", "node-b"), env, tmp_path)
    try:
        await wait_all_ready(nodes)
        total = 10_000
        async with httpx.AsyncClient(timeout=60) as a, httpx.AsyncClient(timeout=60) as b:
            a.base_url, b.base_url = nodes[0][1], nodes[1][1]
            assert (await a.put("/v1/handlers/work", json={"url": handler_url})).status_code == 201
            started = time.monotonic()
            for chunk in range(10):
                client = a if chunk % 2 else b
                jobs = [{"handler": "work", "payload": {"i": chunk * 1000 + i}} for i in range(1000)]
                assert (await client.post("/v1/jobs/batch", json={"jobs": jobs})).status_code == 201

            completed = 0
            conn = await connect(url)
            try:
                deadline = time.monotonic() + 240
                while time.monotonic() < deadline:
                    # Complete accepted jobs through the node that did NOT necessarily dispatch them.
                    while completed < len(accepted):
                        job = accepted[completed]
                        client = a if completed % 2 else b
                        reply = await client.post(f"/v1/executions/{job['execution_id']}/complete",
                                                  json={"outcome": "succeeded", "result": "cb"},
                                                  headers={"authorization": f"Bearer {job['callback']['token']}"})
                        assert reply.status_code == 200, reply.text
                        completed += 1
                    done = await conn.fetchval("SELECT count(*) FROM job_executions WHERE state = 'SUCCEEDED'")
                    if done == total:
                        break
                    await asyncio.sleep(0.1)
                elapsed = time.monotonic() - started
                states = dict(await conn.fetch("SELECT state, count(*) FROM job_executions GROUP BY state"))
                # The claim writes no event row (DESIGN §8): a job claimed twice shows in its
                # outcome rows instead (a claim put back undispatched writes an ENQUEUED row; one
                # dispatched twice, two calls, or two outcomes when both were recorded).
                outcomes = dict(await conn.fetch(
                    "SELECT coalesce(type, event->>'new_state'), count(*) FROM job_events GROUP BY 1"))
                succeeded_once = await conn.fetchval(
                    "SELECT count(*) FROM (SELECT execution_id FROM job_events WHERE type = 'execution.succeeded' "
                    "AND attempt = 0 AND (node LIKE 'node-a-%' OR node LIKE 'node-b-%') "
                    "GROUP BY execution_id HAVING count(*) = 1) x")
            finally:
                await conn.close()
        assert states == {"SUCCEEDED": total}, states
        assert len(seen) == total, f"{total - len(seen)} jobs never reached the handler"
        assert max(seen.values()) == 1, f"dispatched twice: {[k for k, v in seen.items() if v > 1][:5]}"
        assert outcomes == {"execution.succeeded": total}, outcomes
        assert succeeded_once == total, f"{succeeded_once} of {total} jobs with one success of attempt 0"
        print(f"\n2 nodes drained {total} jobs in {elapsed:.2f}s: {total / elapsed:.0f} jobs/s "
              f"({len(accepted)} via 202 + callback)")
    finally:
        codes = [terminate(process) for process, _, _ in nodes]
        await runner.cleanup()
    assert codes == [0, 0], [log.read_text()[-2000:] for _, _, log in nodes]
