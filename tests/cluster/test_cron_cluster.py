"""Three `jobwire serve` nodes and `*/1 * * * * *` schedules (DESIGN §6.3): a SINGLE_INSTANCE
schedule makes exactly one execution per instant, none missing; an EVERY_INSTANCE one makes one per
node per instant. JOBWIRE_TEST_CRON_SECONDS sets the run's length (default 20)."""

from __future__ import annotations

import asyncio
import collections
import os
from datetime import timedelta

import httpx
import pytest
from aiohttp import web

from tests.cluster.processes import connect, handler_server, serve_nodes, terminate, wait_all_ready

pytestmark = pytest.mark.cluster

SECONDS = float(os.environ.get("JOBWIRE_TEST_CRON_SECONDS", "20"))


async def test_three_nodes_fire_one_execution_per_instant_and_one_per_node_for_every_instance(
        tmp_path, fresh_database):
    url = await fresh_database()

    async def handle(request: web.Request) -> web.Response:
        await request.read()
        return web.json_response({"result": None})

    runner, handler_url = await handler_server("/tick", handle)
    env = {"JOBWIRE_DATABASE_URL": url, "JOBWIRE_POLL_INTERVAL": "0.2", "JOBWIRE_HEARTBEAT_INTERVAL": "0.5"}
    nodes = serve_nodes(("alpha", "bravo", "charlie"), env, tmp_path)
    conn = None
    try:
        await wait_all_ready(nodes)
        conn = await connect(url)
        async with httpx.AsyncClient(base_url=nodes[0][1], timeout=30) as api:
            assert (await api.put("/v1/handlers/tick", json={"url": handler_url})).status_code == 201
            for job_id, mode in (("single", "SINGLE_INSTANCE"), ("every", "EVERY_INSTANCE")):
                put = await api.put(f"/v1/schedules/{job_id}", json={
                    "cron": "*/1 * * * * *", "handler": "tick", "execution_mode": mode})
                assert put.status_code == 201, put.text
            await asyncio.sleep(SECONDS)
            for job_id, mode in (("single", "SINGLE_INSTANCE"), ("every", "EVERY_INSTANCE")):
                await api.put(f"/v1/schedules/{job_id}", json={
                    "cron": "*/1 * * * * *", "handler": "tick", "execution_mode": mode, "enabled": False})
        await asyncio.sleep(2)  # let the last fires finish

        rows = await conn.fetch("SELECT job_id, fire_at, fire_node, state, scheduled_at, attempt "
                                "FROM job_executions WHERE job_type = 'CRON'")
        single = collections.Counter(r["fire_at"] for r in rows if r["job_id"] == "single")
        instants = sorted(single)
        assert len(instants) >= SECONDS - 3
        assert set(single.values()) == {1}, "an instant fired more than once"
        missing = [a + timedelta(seconds=1) for a, b in zip(instants, instants[1:], strict=False)
                   if b - a != timedelta(seconds=1)]
        assert missing == [], f"instants never fired: {missing}"
        assert all(r["fire_node"] == "" and r["state"] == "SUCCEEDED" and r["fire_at"] == r["scheduled_at"]
                   for r in rows if r["job_id"] == "single")

        every: dict = collections.defaultdict(list)
        for r in rows:
            if r["job_id"] == "every":
                every[r["fire_at"]].append(r["fire_node"])
        assert all(len(who) == len(set(who)) for who in every.values()), "a node fired an instant twice"
        node_ids = {n for who in every.values() for n in who}
        assert len(node_ids) == 3 and {n.split("-")[0] for n in node_ids} == {"alpha", "bravo", "charlie"}
        full = [t for t, who in every.items() if len(who) == 3]
        assert len(full) >= len(every) - 2  # the first and last instants may be partial
        print(f"\ncron cluster run of {SECONDS:.0f} s: SINGLE_INSTANCE {len(instants)} instants, "
              f"executions per instant {sorted(set(single.values()))}; EVERY_INSTANCE {len(every)} instants, "
              f"{len(full)} with one execution on each of the 3 nodes")
    finally:
        if conn is not None:
            await conn.close()
        for process, _, _ in nodes:
            if process.poll() is None:
                terminate(process)
        await runner.cleanup()
