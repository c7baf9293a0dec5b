"""Deadlines with a real `jobwire serve` and real handlers: heartbeats extend a synchronous call,
and an accepted (202) attempt whose handler goes quiet is abandoned promptly, not at the next scan."""

from __future__ import annotations

import asyncio
import collections
import time
from datetime import datetime

import httpx
import pytest
from aiohttp import web

from tests.cluster.processes import handler_server, serve, terminate, wait_ready

pytestmark = pytest.mark.cluster


async def wait_final(api: httpx.AsyncClient, execution_id: str, timeout: float = 30) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        execution = (await api.get(f"/v1/executions/{execution_id}")).json()
        if execution["state"] not in ("ENQUEUED", "PROCESSING"):
            return execution
        await asyncio.sleep(0.1)
    raise AssertionError(f"{execution_id} still {execution['state']} after {timeout}s")


async def test_heartbeats_extend_a_synchronous_call_past_the_deadline_of_its_claim(tmp_path, fresh_database):
    """timeout_seconds 1.5; the handler works 3 s, heartbeating every 0.5 s, then answers 200.
    The call is not cut off at the claim's deadline: one call, SUCCEEDED, its result kept."""
    url = await fresh_database()
    calls: collections.Counter[str] = collections.Counter()

    async def work(request: web.Request) -> web.Response:
        job = await request.json()
        calls[job["execution_id"]] += 1
        callback = job["callback"]
        async with httpx.AsyncClient(timeout=5) as client:
            for _ in range(6):
                await asyncio.sleep(0.5)
                beat = await client.post(f"{callback['url']}/heartbeat",
                                         headers={"authorization": f"Bearer {callback['token']}"})
                assert beat.status_code == 200 and beat.json() == {"cancel_requested": False}
        return web.json_response({"result": {"worked": 3}})

    runner, handler_url = await handler_server("/work", work)
    log = tmp_path / "node.log"
    process, base = serve({"JOBWIRE_DATABASE_URL": url, "JOBWIRE_SCAN_INTERVAL": "0.5"}, log)
    try:
        await wait_ready(base, process, log)
        async with httpx.AsyncClient(base_url=base, timeout=30) as api:
            assert (await api.put("/v1/handlers/work", json={"url": handler_url})).status_code == 201
            job = (await api.post("/v1/jobs", json={"handler": "work", "timeout_seconds": 1.5,
                                                    "max_attempts": 1})).json()
            done = await wait_final(api, job["id"])
    finally:
        code = terminate(process)
        await runner.cleanup()
    assert (done["state"], done["attempt"], done["result"]) == ("SUCCEEDED", 0, {"worked": 3}), done
    assert calls[job["id"]] == 1, "the call was cut off and made again"
    assert code == 0, log.read_text()[-3000:]


async def test_an_accepted_attempt_whose_handler_goes_quiet_is_abandoned_within_2_s_of_its_deadline(
        tmp_path, fresh_database):
    """The scan interval is the default 30 s; the deadline scan wakes for the deadline it knows of."""
    url = await fresh_database()

    async def accept(_: web.Request) -> web.Response:
        return web.Response(status=202)

    runner, handler_url = await handler_server("/accept", accept)
    log = tmp_path / "node.log"
    process, base = serve({"JOBWIRE_DATABASE_URL": url}, log)
    try:
        await wait_ready(base, process, log)
        async with httpx.AsyncClient(base_url=base, timeout=30) as api:
            assert (await api.put("/v1/handlers/quiet", json={"url": handler_url})).status_code == 201
            results = []
            for timeout in (1.0, 2.5):
                job = (await api.post("/v1/jobs", json={"handler": "quiet", "timeout_seconds": timeout,
                                                        "max_attempts": 1})).json()
                results.append(await wait_final(api, job["id"], timeout=20))
    finally:
        code = terminate(process)
        await runner.cleanup()
    for done in results:
        assert (done["state"], done["error_type"]) == ("DEAD_LETTER", "abandoned_deadline"), done
        late = datetime.fromisoformat(done["completed_at"]) - datetime.fromisoformat(done["deadline_at"])
        assert 0 <= late.total_seconds() <= 2.0, f"abandoned {late.total_seconds():.2f}s after its deadline"
    assert code == 0, log.read_text()[-3000:]
