"""A node survives losing every database connection mid-load: nothing is lost, it stays up."""

from __future__ import annotations

import asyncio
import collections
import time

import httpx
import pytest
from aiohttp import web

from tests.cluster.processes import connect, handler_server, serve, terminate, wait_ready

pytestmark = pytest.mark.cluster


async def test_terminating_every_jobwire_connection_mid_load_loses_nothing(tmp_path, fresh_database):
    url = await fresh_database()
    seen: collections.Counter[str] = collections.Counter()

    async def handle(request: web.Request) -> web.Response:
        job = await request.json()
        seen[job["execution_id"]] += 1
        await asyncio.sleep(0.01)
        return web.json_response({"result": None})

    runner, handler_url = await handler_server("/work", handle)

    log = tmp_path / "node.log"
    # A 30 s poll: the node must be woken by NOTIFY, so LISTEN must come back after each cut.
    process, base = serve({"JOBWIRE_DATABASE_URL": url, "JOBWIRE_POLL_INTERVAL": "30",
                           "JOBWIRE_EXECUTION_TIMEOUT": "10", "JOBWIRE_SCAN_INTERVAL": "1"}, log)
    conn = await connect(url)
    total = 3000
    try:
        await wait_ready(base, process, log)
        async with httpx.AsyncClient(base_url=base, timeout=30) as api:
            assert (await api.put("/v1/handlers/w", json={"url": handler_url})).status_code == 201
            for start in range(0, total, 1000):
                jobs = [{"handler": "w", "payload": {"i": i}} for i in range(start, start + 1000)]
                assert (await api.post("/v1/jobs/batch", json={"jobs": jobs})).status_code == 201

            terminated = 0
            for _ in range(5):  # mid-load: cut every connection Jobwire has, several times
                await asyncio.sleep(0.3)
                terminated += await conn.fetchval(
                    "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                    "WHERE datname = current_database() AND pid <> pg_backend_pid()")
            assert terminated > 0

            deadline = time.monotonic() + 120
            while time.monotonic() < deadline:
                done = await conn.fetchval("SELECT count(*) FROM job_executions WHERE state = 'SUCCEEDED'")
                if done == total:
                    break
                await asyncio.sleep(0.2)
            states = dict(await conn.fetch("SELECT state, count(*) FROM job_executions GROUP BY state"))
            assert process.poll() is None, "the node died"
            assert (await api.get("/readyz")).status_code == 200
            # LISTEN was re-established: an enqueue now is dispatched without waiting for a poll.
            late = (await api.post("/v1/jobs", json={"handler": "w", "payload": {"i": -1}})).json()
            for _ in range(100):
                if late["id"] in seen:
                    break
                await asyncio.sleep(0.05)
            assert late["id"] in seen, "an enqueue after the cuts did not wake the node"
    finally:
        await conn.close()
        code = terminate(process)
        await runner.cleanup()
    assert states == {"SUCCEEDED": total}, states
    assert len(seen) == total + 1
    # A call is made twice only if its outcome could not be written before a cut (then it runs
    # again after its deadline as a new attempt); a cut never loses a job.
    print(f"\n{terminated} connections terminated; {sum(1 for v in seen.values() if v > 1)} jobs ran twice")
    assert code == 0, log.read_text()[-3000:]
