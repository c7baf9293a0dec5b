"""jobwire.events, the subscriber's side of event deliveries: `subscriber(on_event, secret)` served
by a real uvicorn on loopback, subscribed on a real node (API, dispatcher and deliverer), receives
each event verified and typed; a callback that raises answers 500 and the event comes again; a
request not signed with the subscription's secret gets 401, and a secret rotation mends it; and
`verify` checks one request for other frameworks, against signatures made by the
`standardwebhooks` package."""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack
from datetime import UTC, datetime
from typing import Any

import httpx
import orjson
import pytest
from standardwebhooks.webhooks import Webhook

from jobwire import Event
from jobwire.events import BadSignature, NotAnEvent, SubscriberApp, subscriber, verify
from tests.conftest import free_port
from tests.sdk.conftest import Live
from tests.sdk.test_handler_toolkit import Served

LATER = "2999-01-01T00:00:00Z"
# A secret Jobwire never made (the standardwebhooks format: whsec_ and base64).
STRANGER = "whsec_" + "c3RyYW5nZXItc2VjcmV0LW5vdC1qb2J3aXJlcw=="


@pytest.fixture
async def stack() -> AsyncIterator[AsyncExitStack]:
    async with AsyncExitStack() as exits:
        yield exits


async def serve(stack: AsyncExitStack, app: SubscriberApp, port: int) -> Served:
    served = Served(app, port)
    await served.start()
    stack.push_async_callback(served.stop)
    return served


async def until(check: Any, timeout: float = 15.0, what: str = "") -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"not reached: {what}"
        await asyncio.sleep(0.05)


async def test_each_event_is_received_verified_and_typed(live: Live, stack: AsyncExitStack) -> None:
    port = free_port()
    async with httpx.AsyncClient(base_url=live.url, timeout=10) as api:
        created = (await api.put("/v1/subscriptions/audit", json={"url": f"http://127.0.0.1:{port}/events"})).json()
        events: list[Event] = []

        async def on_event(event: Event) -> None:
            events.append(event)

        await serve(stack, subscriber(on_event, created["secret"]), port)
        done = (await api.post("/v1/jobs", json={"handler": "echo", "payload": {"n": 1}})).json()["id"]
        later = (await api.post("/v1/jobs", json={"handler": "echo", "run_at": LATER})).json()["id"]
        assert (await api.post(f"/v1/executions/{later}/cancel")).status_code == 200
        await until(lambda: len(events) >= 2, what="two events")
        assert all(isinstance(e, Event) and e.occurred_at.tzinfo is not None for e in events)
        assert {(e.type, e.data.execution_id, e.data.new_state) for e in events} == {
            ("execution.succeeded", done, "SUCCEEDED"), ("execution.cancelled", later, "CANCELLED")}
        stored = (await api.get(f"/v1/executions/{done}/events")).json()["items"]
        assert [e.raw for e in events if e.data.execution_id == done] == stored  # the feed's own item

        deliveries: list[dict[str, Any]] = []
        for _ in range(300):
            deliveries = (await api.get("/v1/subscriptions/audit/deliveries")).json()["items"]
            if len(deliveries) == 2 and all(d["status"] == "delivered" for d in deliveries):
                break
            await asyncio.sleep(0.05)
        assert {(d["status"], d["tries"], d["last_status"]) for d in deliveries} == {("delivered", 1, 204)}
        await asyncio.sleep(0.5)
        assert len(events) == 2  # each acknowledged once


async def test_a_callback_that_raises_answers_500_and_the_event_comes_again(
        live: Live, stack: AsyncExitStack, caplog: pytest.LogCaptureFixture) -> None:
    port = free_port()
    async with httpx.AsyncClient(base_url=live.url, timeout=10) as api:
        created = (await api.put("/v1/subscriptions/flaky", json={"url": f"http://127.0.0.1:{port}/"})).json()
        calls: list[tuple[int, str]] = []

        def on_event(event: Event) -> None:  # a plain function: run in a worker thread
            calls.append((event.id, threading.current_thread().name))
            if len(calls) == 1:
                raise RuntimeError("the database is away")

        await serve(stack, subscriber(on_event, created["secret"]), port)
        with caplog.at_level(logging.ERROR, logger="jobwire.events"):
            later = (await api.post("/v1/jobs", json={"handler": "echo", "run_at": LATER})).json()["id"]
            assert (await api.post(f"/v1/executions/{later}/cancel")).status_code == 200
            await until(lambda: len(calls) >= 2, what="the event sent again")
        assert calls[0][0] == calls[1][0]  # the same event, again
        assert all(name != threading.main_thread().name for _, name in calls)
        assert any("RuntimeError: the database is away" in r.getMessage() for r in caplog.records)
        delivery: dict[str, Any] = {}
        for _ in range(300):
            [delivery] = (await api.get("/v1/subscriptions/flaky/deliveries")).json()["items"]
            if delivery["status"] == "delivered":
                break
            await asyncio.sleep(0.05)
        assert (delivery["status"], delivery["tries"], delivery["last_status"]) == ("delivered", 2, 204)


async def test_another_secret_gets_401_and_a_rotation_mends_it(live: Live, stack: AsyncExitStack) -> None:
    port = free_port()
    received: list[Event] = []

    async def on_event(event: Event) -> None:
        received.append(event)

    async with httpx.AsyncClient(base_url=live.url, timeout=10) as api:
        assert (await api.put("/v1/subscriptions/rotated",
                              json={"url": f"http://127.0.0.1:{port}/"})).status_code == 201
        stranger = await serve(stack, subscriber(on_event, STRANGER), port)
        later = (await api.post("/v1/jobs", json={"handler": "echo", "run_at": LATER})).json()["id"]
        assert (await api.post(f"/v1/executions/{later}/cancel")).status_code == 200
        failed: dict[str, Any] = {}
        for _ in range(300):
            failed = (await api.get("/v1/subscriptions/rotated")).json()
            if failed["failing_since"]:
                break
            await asyncio.sleep(0.05)
        assert received == [] and "401" in failed["last_error"]
        [delivery] = (await api.get("/v1/subscriptions/rotated/deliveries")).json()["items"]
        assert (delivery["status"], delivery["last_status"]) == ("failed", 401)

        # Rotate: a new secret signs every delivery beside the old one; the subscriber holds both.
        await stranger.stop()
        added = (await api.post("/v1/subscriptions/rotated/secrets", json={})).json()
        await serve(stack, subscriber(on_event, [STRANGER, added["secret"]]), port)
        # Now, rather than at the next probe (409: a probe is out now, and the new secret verifies it).
        resent = await api.post(f"/v1/subscriptions/rotated/deliveries/{delivery['id']}/resend")
        assert resent.status_code in (202, 409), resent.text
        await until(lambda: len(received) == 1, what="the delivery after the rotation")
        assert received[0].data.execution_id == later


@pytest.fixture
async def app_url(stack: AsyncExitStack) -> str:
    served = await serve(stack, subscriber(lambda event: None, SECRET), free_port())
    return served.url


SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
ITEM = {"id": 42, "type": "execution.succeeded", "occurred_at": "2026-12-01T12:00:00Z",
        "data": {"execution_id": "0f8fad5b-d9cb-469f-a165-70867728950e", "job_id": "j", "job_type": "DELAYED",
                 "queue": "default", "handler": "echo", "new_state": "SUCCEEDED", "attempt": 0, "max_attempts": 5,
                 "error_type": None, "scheduled_at": "2026-12-01T11:59:59Z", "created_at": "2026-12-01T11:59:59Z",
                 "started_at": "2026-12-01T12:00:00Z", "completed_at": "2026-12-01T12:00:00Z", "metadata": None,
                 "retry_at": None}}


def signed(body: bytes, secret: str = SECRET, msg_id: str = "42", at: float | None = None) -> dict[str, str]:
    """The headers of a delivery of `body`, signed by the standardwebhooks package."""
    moment = datetime.fromtimestamp(int(time.time() if at is None else at), UTC)
    return {"content-type": "application/json", "webhook-id": msg_id,
            "webhook-timestamp": str(int(moment.timestamp())),
            "webhook-signature": Webhook(secret).sign(msg_id, moment, body.decode())}


async def test_the_app_refuses_what_jobwire_did_not_sign(app_url: str) -> None:
    body = orjson.dumps(ITEM)
    async with httpx.AsyncClient(base_url=app_url, timeout=10) as http:
        assert (await http.post("/any/path", content=body, headers=signed(body))).status_code == 204
        refused = {
            "another secret": await http.post("/", content=body, headers=signed(body, STRANGER)),
            "a changed body": await http.post("/", content=body.replace(b"42", b"43"), headers=signed(body)),
            "an old timestamp": await http.post("/", content=body, headers=signed(body, at=time.time() - 3600)),
            "no signature": await http.post("/", content=body, headers={"content-type": "application/json"}),
        }
        for case, answer in refused.items():
            assert answer.status_code == 401, case
            assert answer.headers["content-type"] == "application/problem+json", case
        assert "no signature matches the subscription's secrets" in refused["another secret"].json()["detail"]
        not_json = b"not an event"
        assert (await http.post("/", content=not_json, headers=signed(not_json))).status_code == 400
        assert (await http.post("/", content=b"{}", headers=signed(b"{}"))).status_code == 400
        wrong_method = await http.get("/")
        assert wrong_method.status_code == 405 and wrong_method.headers["allow"] == "POST"


def test_verify_returns_the_typed_event_for_any_framework() -> None:
    body = orjson.dumps(ITEM)
    headers = {name.title(): value for name, value in signed(body).items()}  # any case, as frameworks give them
    event = verify(body, headers, SECRET)
    assert isinstance(event, Event) and (event.id, event.type, event.data.new_state) == (
        42, "execution.succeeded", "SUCCEEDED")
    assert event.occurred_at == datetime(2026, 12, 1, 12, tzinfo=UTC)
    assert verify(body, headers, [STRANGER, SECRET]) == event  # during a rotation, either secret
    with pytest.raises(BadSignature, match="no signature matches"):
        verify(body, headers, STRANGER)
    with pytest.raises(BadSignature, match="more than 300 seconds"):
        verify(body, headers, SECRET, now=time.time() + 3600)
    with pytest.raises(NotAnEvent):
        verify(b"[1]", signed(b"[1]"), SECRET)
    with pytest.raises(ValueError, match="a subscription secret is a 'whsec_"):
        verify(body, headers, "not-a-secret")
