"""jobwire.handler's batch form (`batch_asgi_app`) against a real Jobwire: a handler registered
with `batch` gets its due jobs in one call and answers each; outcomes are read back through the
API."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import httpx
import pytest

from jobwire.handler import Job, Permanent, batch_asgi_app
from tests.conftest import RunningServer, free_port, register, wait_for_state
from tests.sdk.test_handler_toolkit import Served


@pytest.fixture
async def api(jobwire: Callable[..., Awaitable[RunningServer]]) -> AsyncIterator[httpx.AsyncClient]:
    server = await jobwire()
    async with httpx.AsyncClient(base_url=server.url, timeout=10) as client:
        yield client


async def deploy(api: httpx.AsyncClient, name: str, handle_batch: Any, **registration: Any) -> Served:
    port = free_port()
    secret = (await register(api, name, f"http://127.0.0.1:{port}/{name}", **registration))["secret"]
    served = Served(batch_asgi_app(handle_batch, secret), port)
    await served.start()
    return served


async def enqueue_all(api: httpx.AsyncClient, *jobs: dict[str, Any]) -> list[str]:
    response = await api.post("/v1/jobs/batch", json={"jobs": list(jobs)})
    assert response.status_code == 201, response.text
    return [item["id"] for item in response.json()["items"]]


async def test_each_job_of_a_batch_gets_its_own_outcome(api: httpx.AsyncClient) -> None:
    calls: list[list[Job]] = []

    async def handle_batch(jobs: list[Job]) -> list[Any]:
        calls.append(jobs)
        out: list[Any] = []
        for job in jobs:
            if job.payload == "ok":
                out.append({"doubled": job.attempt * 2})
            elif job.payload == "flaky" and job.attempt == 0:
                out.append(TimeoutError("upstream slow"))
            elif job.payload == "flaky":
                out.append("recovered")
            else:
                out.append(Permanent("never valid"))
        return out

    served = await deploy(api, "bulk", handle_batch, batch={"max_size": 10})
    try:
        ok, flaky, bad = await enqueue_all(api, {"handler": "bulk", "payload": "ok"},
                                           {"handler": "bulk", "payload": "flaky"},
                                           {"handler": "bulk", "payload": "bad"})
        assert (await wait_for_state(api, ok, "SUCCEEDED"))["result"] == {"doubled": 0}
        recovered = await wait_for_state(api, flaky, "SUCCEEDED")
        assert recovered["attempt"] == 1 and recovered["result"] == "recovered"
        first = (await api.get(f"/v1/executions/{flaky}/attempts")).json()["items"][0]
        assert (first["error_type"], first["error"]) == ("TimeoutError", "upstream slow")
        dead = await wait_for_state(api, bad, "DEAD_LETTER")
        assert (dead["attempt"], dead["error_type"], dead["last_error"]) == (0, "Permanent", "never valid")
        assert [len(c) for c in calls] == [3, 1]
    finally:
        await served.stop()


async def test_a_batch_that_raises_fails_every_job(api: httpx.AsyncClient) -> None:
    async def handle_batch(jobs: list[Job]) -> list[Any]:
        raise ConnectionError("database down")

    served = await deploy(api, "broken", handle_batch, batch={"max_size": 10})
    try:
        for execution_id in await enqueue_all(api, *({"handler": "broken", "max_attempts": 1} for _ in range(2))):
            dead = await wait_for_state(api, execution_id, "DEAD_LETTER")
            assert (dead["error_type"], dead["last_error"]) == ("ConnectionError", "database down")
    finally:
        await served.stop()


async def test_a_single_dispatch_is_a_batch_of_one_answered_in_the_single_form(api: httpx.AsyncClient) -> None:
    async def handle_batch(jobs: list[Job]) -> list[Any]:
        return [{"n": len(jobs), "payload": job.payload} for job in jobs]

    served = await deploy(api, "unbatched", handle_batch)  # registered without batch
    try:
        [execution_id] = await enqueue_all(api, {"handler": "unbatched", "payload": 7})
        assert (await wait_for_state(api, execution_id, "SUCCEEDED"))["result"] == {"n": 1, "payload": 7}
    finally:
        await served.stop()


async def test_a_batch_signed_with_another_secret_is_refused(api: httpx.AsyncClient) -> None:
    ran: list[int] = []

    async def handle_batch(jobs: list[Job]) -> list[Any]:
        ran.append(len(jobs))
        return [None] * len(jobs)

    port = free_port()
    await register(api, "wrong", f"http://127.0.0.1:{port}/wrong", batch={"max_size": 10})
    served = Served(batch_asgi_app(handle_batch, "whsec_" + "QUJD" * 8), port)
    await served.start()
    try:
        [execution_id] = await enqueue_all(api, {"handler": "wrong", "max_attempts": 1})
        dead = await wait_for_state(api, execution_id, "DEAD_LETTER")
        assert dead["error_type"] == "http_status" and "401" in dead["last_error"]
        assert ran == []
    finally:
        await served.stop()
