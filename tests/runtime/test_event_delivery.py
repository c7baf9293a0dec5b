"""Event deliveries against a real node, real handlers and a real subscriber: every typed event
delivered once per transition, signed (verified with `standardwebhooks`), in order per execution;
a subscriber that is down is probed one delivery at a time and receives everything once it is back,
nothing it acknowledged twice; a delivery outlives its execution; a refused destination is dead at
once; resend sends again with the same webhook-id."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import httpx
import orjson
import pytest
from aiohttp import web
from standardwebhooks import Webhook

from tests.conftest import HandlerServer, RunningServer, free_port, register, wait_for_state

LATER = "2999-01-01T00:00:00Z"


@dataclass
class Subscriber:
    """A subscriber on loopback: answers `status` (a 2xx acknowledges), records every request and
    how many were open at once."""

    url: str
    status: int = 200
    received: list[dict[str, Any]] = field(default_factory=list)  # {id, headers, body, status}
    open_now: int = 0
    most_open_while_failing: int = 0
    delay: float = 0.0

    def acknowledged(self) -> list[dict[str, Any]]:
        return [r for r in self.received if 200 <= r["status"] < 300]

    async def wait_for(self, check: Callable[[], bool], timeout: float = 30.0, what: str = "") -> None:
        deadline = time.monotonic() + timeout
        while not check():
            if time.monotonic() > deadline:
                raise AssertionError(f"subscriber: {what or 'condition'} not reached; got {len(self.received)} "
                                     f"requests: {[r['body'].get('type') for r in self.received][-20:]}")
            await asyncio.sleep(0.05)


@pytest.fixture
async def subscriber() -> AsyncIterator[Subscriber]:
    port = free_port()
    sub = Subscriber(url=f"http://127.0.0.1:{port}/events")

    async def receive(request: web.Request) -> web.StreamResponse:
        body = await request.read()
        status = sub.status
        sub.open_now += 1
        if status >= 300:
            sub.most_open_while_failing = max(sub.most_open_while_failing, sub.open_now)
        try:
            if sub.delay:
                await asyncio.sleep(sub.delay)
        finally:
            sub.open_now -= 1
        sub.received.append({"id": request.headers.get("webhook-id"), "headers": dict(request.headers),
                             "raw": body, "body": orjson.loads(body), "status": status})
        return web.Response(status=status, text="ok" if status < 300 else "down")

    app = web.Application()
    app.router.add_post("/events", receive)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    yield sub
    await runner.cleanup()


async def subscribe(api: httpx.AsyncClient, url: str, name: str = "audit", **filters: Any) -> dict[str, Any]:
    response = await api.put(f"/v1/subscriptions/{name}", json={"url": url, **filters})
    assert response.status_code == 201, response.text
    return response.json()


async def enqueue(api: httpx.AsyncClient, **body: Any) -> str:
    response = await api.post("/v1/jobs", json=body)
    assert response.status_code == 201, response.text
    return response.json()["id"]


async def events_of(api: httpx.AsyncClient, execution_id: str) -> list[dict[str, Any]]:
    response = await api.get(f"/v1/executions/{execution_id}/events")
    assert response.status_code == 200, response.text
    return response.json()["items"]


def accept(_: web.Request, __: dict[str, Any]) -> Awaitable[web.StreamResponse]:
    async def reply() -> web.StreamResponse:
        return web.Response(status=202)
    return reply()


def fail(_: web.Request, __: dict[str, Any]) -> Awaitable[web.StreamResponse]:
    async def reply() -> web.StreamResponse:
        return web.Response(status=500, text="boom")
    return reply()


async def test_every_type_is_delivered_once_signed_in_order_per_execution(
        jobwire: Callable[..., Awaitable[RunningServer]], handler: HandlerServer, subscriber: Subscriber) -> None:
    server = await jobwire(scan_interval=0.3)
    async with httpx.AsyncClient(base_url=server.url, timeout=10) as api:
        secret = (await subscribe(api, subscriber.url))["secret"]
        await register(api, "ok", handler.url + "/ok")
        await register(api, "boom", handler.route("/boom", fail))
        await register(api, "slow", handler.route("/slow", accept), timeout_seconds=0.5)
        succeeded = await enqueue(api, handler="ok", payload={"n": 1})
        failed = await enqueue(api, handler="boom", max_attempts=2)
        abandoned = await enqueue(api, handler="slow", max_attempts=1)
        cancelled = await enqueue(api, handler="ok", run_at=LATER)
        assert (await api.post(f"/v1/executions/{cancelled}/cancel")).status_code == 200
        await wait_for_state(api, succeeded, "SUCCEEDED")
        await wait_for_state(api, failed, "DEAD_LETTER")
        await wait_for_state(api, abandoned, "DEAD_LETTER", timeout=20)
        assert (await api.post(f"/v1/executions/{failed}/retry")).status_code == 200
        await wait_for_state(api, failed, "DEAD_LETTER")

        expected = {x: await events_of(api, x) for x in (succeeded, failed, abandoned, cancelled)}
        total = sum(len(v) for v in expected.values())
        types = {e["type"] for v in expected.values() for e in v}
        assert types == {"execution.succeeded", "execution.failed", "execution.abandoned",
                         "execution.dead_lettered", "execution.cancelled", "execution.retried"}
        await subscriber.wait_for(lambda: len(subscriber.received) >= total, what=f"{total} events")
        await asyncio.sleep(1.0)  # nothing more comes
        assert len(subscriber.received) == total

        verifier = Webhook(secret)
        for request in subscriber.received:
            verified = verifier.verify(request["raw"], request["headers"])
            assert verified == request["body"]
            assert request["headers"]["webhook-id"] == str(request["body"]["id"])
            assert request["headers"]["jobwire-event-type"] == request["body"]["type"]
            assert request["headers"]["jobwire-subscription"] == "audit"
        for execution_id, listed in expected.items():
            got = [r["body"] for r in subscriber.received if r["body"]["data"]["execution_id"] == execution_id]
            assert got == listed  # the items GET …/events lists, each once, in their order


async def test_a_subscriber_that_is_down_is_probed_one_at_a_time_and_gets_everything_once_back(
        jobwire: Callable[..., Awaitable[RunningServer]], handler: HandlerServer, subscriber: Subscriber) -> None:
    server = await jobwire()
    async with httpx.AsyncClient(base_url=server.url, timeout=10) as api:
        await subscribe(api, subscriber.url, types=["execution.succeeded"])
        await register(api, "ok", handler.url + "/ok")
        subscriber.status = 503
        subscriber.delay = 0.2
        ids = [await enqueue(api, handler="ok", payload={"n": n}) for n in range(30)]
        for execution_id in ids:
            await wait_for_state(api, execution_id, "SUCCEEDED")
        # The first tries go out together (the subscription was healthy); once one failed, it is probed.
        # The pump may still be writing the last deliveries when the first try fails: wait for both.
        for _ in range(400):
            shown = (await api.get("/v1/subscriptions/audit")).json()
            if shown["failing_since"] is not None and shown["backlog"] == 30:
                break
            await asyncio.sleep(0.05)
        assert shown["failures"] >= 1 and shown["last_error"].startswith("HTTP 503") and shown["backlog"] == 30
        await subscriber.wait_for(lambda: subscriber.open_now == 0, what="the first tries answered")
        before = len(subscriber.received)
        subscriber.most_open_while_failing = 0
        await subscriber.wait_for(lambda: len(subscriber.received) >= before + 3, what="three probes")
        assert subscriber.most_open_while_failing == 1
        assert len(subscriber.received) - before <= 4  # probes over a few seconds, not a storm of retries

        subscriber.status, subscriber.delay = 200, 0.0
        wanted = {str(e["id"]) for x in ids for e in await events_of(api, x)}
        await subscriber.wait_for(lambda: {r["id"] for r in subscriber.acknowledged()} >= wanted, timeout=40,
                                  what="every event acknowledged")
        acked = [r["id"] for r in subscriber.acknowledged()]
        assert sorted(acked) == sorted(set(acked))  # nothing acknowledged twice
        healthy = (await api.get("/v1/subscriptions/audit")).json()
        assert (healthy["failing_since"], healthy["failures"], healthy["backlog"]) == (None, 0, 0)
        delivered = (await api.get("/v1/subscriptions/audit/deliveries", params={"status": "delivered"})).json()
        assert len(delivered["items"]) == 30


async def test_a_pending_delivery_outlives_its_executions_deletion(
        jobwire: Callable[..., Awaitable[RunningServer]], handler: HandlerServer, subscriber: Subscriber) -> None:
    server = await jobwire()
    async with httpx.AsyncClient(base_url=server.url, timeout=10) as api:
        await subscribe(api, subscriber.url)
        await register(api, "ok", handler.url + "/ok")
        subscriber.status = 500
        execution_id = await enqueue(api, handler="ok", payload={"keep": True})
        await wait_for_state(api, execution_id, "SUCCEEDED")
        [event] = await events_of(api, execution_id)
        await subscriber.wait_for(lambda: len(subscriber.received) >= 1, what="a first try")
        assert (await api.delete(f"/v1/executions/{execution_id}")).status_code == 204
        assert (await api.get(f"/v1/executions/{execution_id}")).status_code == 404
        subscriber.status = 200
        await subscriber.wait_for(lambda: len(subscriber.acknowledged()) == 1, timeout=20, what="the delivery")
        assert subscriber.acknowledged()[0]["body"] == event


async def test_a_refused_destination_is_dead_at_once_and_shows_on_the_subscription(
        jobwire: Callable[..., Awaitable[RunningServer]]) -> None:
    # localhost resolves to a loopback address, which "public" refuses: judged at each try.
    server = await jobwire(handler_networks="public")
    async with httpx.AsyncClient(base_url=server.url, timeout=10) as api:
        await subscribe(api, f"http://localhost:{free_port()}/events")
        await register(api, "h", "http://93.184.216.34:9/never")  # never called: its job waits, then is cancelled
        execution_id = await enqueue(api, handler="h", run_at=LATER)
        assert (await api.post(f"/v1/executions/{execution_id}/cancel")).status_code == 200
        for _ in range(200):
            dead = (await api.get("/v1/subscriptions/audit/deliveries", params={"status": "dead"})).json()["items"]
            if dead:
                break
            await asyncio.sleep(0.05)
        [delivery] = dead
        assert delivery["tries"] == 1 and "blocked destination" in delivery["last_error"]
        shown = (await api.get("/v1/subscriptions/audit")).json()
        assert "blocked destination" in shown["last_error"] and shown["backlog"] == 0


async def test_resend_sends_a_delivered_event_again_with_the_same_webhook_id(
        jobwire: Callable[..., Awaitable[RunningServer]], handler: HandlerServer, subscriber: Subscriber) -> None:
    server = await jobwire()
    async with httpx.AsyncClient(base_url=server.url, timeout=10) as api:
        await subscribe(api, subscriber.url)
        await register(api, "ok", handler.url + "/ok")
        execution_id = await enqueue(api, handler="ok")
        await wait_for_state(api, execution_id, "SUCCEEDED")
        await subscriber.wait_for(lambda: len(subscriber.received) == 1, what="the delivery")
        [delivery] = (await api.get("/v1/subscriptions/audit/deliveries")).json()["items"]
        for _ in range(100):
            if delivery["status"] == "delivered":
                break
            await asyncio.sleep(0.05)
            [delivery] = (await api.get("/v1/subscriptions/audit/deliveries")).json()["items"]
        assert (await api.post(f"/v1/subscriptions/audit/deliveries/{delivery['id']}/resend")).status_code == 202
        await subscriber.wait_for(lambda: len(subscriber.received) == 2, what="the resent delivery")
        first, again = subscriber.received
        assert again["id"] == first["id"] and again["body"] == first["body"]


async def test_an_untracked_schedules_successes_are_delivered_though_their_executions_go(
        jobwire: Callable[..., Awaitable[RunningServer]], handler: HandlerServer, subscriber: Subscriber) -> None:
    """`tracked: false` deletes a schedule's successes (with their events) at its next fire, which
    may come before the node's pump read them: each success is delivered all the same."""
    server = await jobwire(scheduler_interval=0.25)
    async with httpx.AsyncClient(base_url=server.url, timeout=10) as api:
        await subscribe(api, subscriber.url, types=["execution.succeeded"])
        await register(api, "ok", handler.url + "/ok")
        schedule = {"cron": "*/1 * * * * *", "handler": "ok", "tracked": False}
        assert (await api.put("/v1/schedules/every-second", json=schedule)).status_code == 201
        await handler.wait_for(4, timeout=20)
        assert (await api.put("/v1/schedules/every-second", json={**schedule, "enabled": False})).status_code == 200
        succeeded = len(handler.received)
        await subscriber.wait_for(lambda: len(subscriber.acknowledged()) >= succeeded, timeout=20,
                                  what="every success")
        bodies = [r["body"] for r in subscriber.acknowledged()]
        assert {b["data"]["job_id"] for b in bodies} == {"every-second"}
        assert len({b["id"] for b in bodies}) == len(bodies) >= succeeded
        gone = [b for b in bodies if (await api.get(f"/v1/executions/{b['data']['execution_id']}")).status_code == 404]
        assert len(gone) >= succeeded - 1  # at most the last success remains
