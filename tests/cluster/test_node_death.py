"""Three `jobwire serve` nodes on one database; one is killed with SIGKILL mid-flight.

Every job still ends SUCCEEDED; only the executions the dead node held are dispatched a second
time (as a new attempt, after a recorded ABANDONED); nothing stays PROCESSING; the dead node's
heartbeat row is gone.
"""

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

HEARTBEAT_TIMEOUT = 3.0
SCAN_INTERVAL = 1.0


async def test_kill_9_of_one_node_redispatches_only_its_executions(tmp_path, fresh_database):
    url = await fresh_database()
    dispatches: list[tuple[float, str, int]] = []  # (time, execution id, attempt)

    async def handle(request: web.Request) -> web.Response:
        job = await request.json()
        dispatches.append((time.monotonic(), job["execution_id"], job["attempt"]))
        await asyncio.sleep(2)
        return web.json_response({"result": job["attempt"]})

    runner, handler_url = await handler_server("/slow", handle)

    env = {
        "JOBWIRE_DATABASE_URL": url,
        "JOBWIRE_POLL_INTERVAL": "0.2",
        "JOBWIRE_CONCURRENCY": "10",
        "JOBWIRE_HEARTBEAT_INTERVAL": "0.5",
        "JOBWIRE_HEARTBEAT_TIMEOUT": str(HEARTBEAT_TIMEOUT),
        "JOBWIRE_SCAN_INTERVAL": str(SCAN_INTERVAL),
        "JOBWIRE_EXECUTION_TIMEOUT": "60",
    }
    nodes = serve_nodes(("alpha", "bravo", "charlie"), env, tmp_path)
    conn = None
    try:
        await wait_all_ready(nodes)
        conn = await connect(url)
        async with httpx.AsyncClient(base_url=nodes[0][1], timeout=30) as api:
            registered = await api.put("/v1/handlers/slow", json={"url": handler_url})
            assert registered.status_code == 201
            jobs = [{"handler": "slow", "payload": {"i": i}} for i in range(60)]
            assert (await api.post("/v1/jobs/batch", json={"jobs": jobs})).status_code == 201

            # Wait until the victim holds calls in flight, then kill it without warning.
            victim_process, victim_url, _ = nodes[1]
            victim_id = None
            for _ in range(200):
                held = await conn.fetch("SELECT locked_by, count(*) FROM job_executions "
                                        "WHERE state = 'PROCESSING' AND locked_by LIKE 'bravo-%' GROUP BY 1")
                if held and held[0]["count"] >= 5:
                    victim_id = held[0]["locked_by"]
                    break
                await asyncio.sleep(0.05)
            assert victim_id, "the victim never held work"
            held_ids = {r["id"] for r in await conn.fetch(
                "SELECT id::text FROM job_executions WHERE state = 'PROCESSING' AND locked_by = $1", victim_id)}
            victim_process.send_signal(signal.SIGKILL)
            killed_at = time.monotonic()
            victim_process.wait(10)

            deadline = time.monotonic() + 90
            while time.monotonic() < deadline:
                done = await conn.fetchval("SELECT count(*) FROM job_executions WHERE state = 'SUCCEEDED'")
                if done == 60:
                    break
                await asyncio.sleep(0.2)
            states = dict(await conn.fetch("SELECT state, count(*) FROM job_executions GROUP BY state"))
            heartbeat_left = await conn.fetchval(
                "SELECT count(*) FROM job_server_heartbeats WHERE server_id = $1", victim_id)
            abandoned = {r["id"] for r in await conn.fetch(
                "SELECT execution_id::text AS id FROM job_events WHERE event->>'new_state' = 'ABANDONED'")}
    finally:
        if conn is not None:
            await conn.close()
        codes = [terminate(p) for p, _, _ in (nodes[0], nodes[2])]
        await runner.cleanup()

    assert states == {"SUCCEEDED": 60}, states
    per_execution = collections.Counter(execution for _, execution, _ in dispatches)
    twice = {e for e, n in per_execution.items() if n > 1}
    assert len(per_execution) == 60
    assert max(per_execution.values()) <= 2
    # Only what the dead node held ran again, and each of those after a recorded ABANDONED.
    assert twice <= held_ids, twice - held_ids
    assert abandoned == held_ids
    attempts = collections.defaultdict(list)
    for _, execution, attempt in dispatches:
        attempts[execution].append(attempt)
    # No attempt reached the handler twice. The dead node's executions run again as attempt 1
    # (attempt 0 may have died with the node before its request left); the others once, as 0.
    for execution, seen in attempts.items():
        expected = ({0, 1}, {1}) if execution in held_ids else ({0},)
        assert len(seen) == len(set(seen)) and set(seen) in expected, (execution, seen)
    assert heartbeat_left == 0
    assert codes == [0, 0]

    redispatched = [t for t, execution, attempt in dispatches if execution in held_ids and attempt == 1]
    assert redispatched, "the dead node's work was never dispatched again"
    recovery = min(redispatched) - killed_at
    print(f"\nkill -9 → first re-dispatch of the dead node's work: {recovery:.2f}s "
          f"(heartbeat timeout {HEARTBEAT_TIMEOUT}s + scan interval {SCAN_INTERVAL}s); "
          f"{len(held_ids)} executions recovered")
    assert recovery <= HEARTBEAT_TIMEOUT + SCAN_INTERVAL + 2.0
