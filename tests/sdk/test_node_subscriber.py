"""examples/node-subscriber, the Node.js event subscriber of the README and the Events guide, run
for real: `npm ci` from its committed package-lock.json into a temporary copy, `node server.js`
with the secret of a subscription on a real node (API, dispatcher and deliverer). It verifies
each delivery with the `standardwebhooks` npm package and handles each event once: a resend of
an event it acknowledged is acknowledged again and not handled twice; a request whose signature
does not verify gets 401.

Without Node.js (or npm) the tests are skipped, saying so; under CI (the environment variable CI
set) that is a failure instead, as in tests/runtime/test_node_handler.py.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest

from app.domain.signing import new_handler_secret, sign_webhook
from tests.conftest import free_port
from tests.runtime.test_node_handler import npm_ci_copy
from tests.sdk.conftest import Live
from tests.sdk.test_node_example import running_example

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "node-subscriber"
EXAMPLE_FILES = ("package.json", "package-lock.json", "server.js")
LATER = "2999-01-01T00:00:00Z"


@pytest.fixture(scope="module")
def example_app(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Path]:
    return npm_ci_copy(EXAMPLE, EXAMPLE_FILES, tmp_path_factory.mktemp("node-subscriber"))


@dataclass
class Subscriber:
    url: str
    secret: str
    output: list[str]

    def handled(self) -> list[list[str]]:
        """The events it handled: [id, type, execution id] per line it printed."""
        return [words for words in map(str.split, self.output) if words and words[0].isdigit()]


@pytest.fixture
async def subscriber(example_app: tuple[str, Path], live: Live) -> AsyncIterator[Subscriber]:
    """The example running with the secret of subscription `audit`, which points at it."""
    port = free_port()
    url = f"http://127.0.0.1:{port}/jobwire/events"
    async with httpx.AsyncClient(base_url=live.url, timeout=10) as api:
        created = await api.put("/v1/subscriptions/audit", json={"url": url})
        assert created.status_code == 201, created.text
    secret = created.json()["secret"]
    async with running_example(example_app, secret, port, "JOBWIRE_SUBSCRIPTION_SECRET") as output:
        yield Subscriber(url, secret, output)


async def until(check: Callable[[], bool], timeout: float = 15.0, what: str = "") -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"not reached: {what}"
        await asyncio.sleep(0.05)


async def test_the_node_subscriber_handles_each_event_once_even_when_it_comes_again(
        subscriber: Subscriber, live: Live) -> None:
    async with httpx.AsyncClient(base_url=live.url, timeout=10) as api:
        done = (await api.post("/v1/jobs", json={"handler": "echo", "payload": {"n": 1}})).json()["id"]
        later = (await api.post("/v1/jobs", json={"handler": "echo", "run_at": LATER})).json()["id"]
        assert (await api.post(f"/v1/executions/{later}/cancel")).status_code == 200
        await until(lambda: len(subscriber.handled()) >= 2, what="two events handled")
        handled = subscriber.handled()
        assert sorted((kind, execution) for _, kind, execution in handled) == sorted(
            [("execution.succeeded", done), ("execution.cancelled", later)])

        deliveries: list[dict[str, Any]] = []
        for _ in range(300):
            deliveries = (await api.get("/v1/subscriptions/audit/deliveries")).json()["items"]
            if len(deliveries) == 2 and all(d["status"] == "delivered" for d in deliveries):
                break
            await asyncio.sleep(0.05)
        assert {(d["status"], d["last_status"]) for d in deliveries} == {("delivered", 204)}
        assert sorted(str(d["event"]["id"]) for d in deliveries) == sorted(event_id for event_id, _, _ in handled)

        # Sent again (at least once): acknowledged again, handled once.
        again = deliveries[0]
        assert (await api.post(f"/v1/subscriptions/audit/deliveries/{again['id']}/resend")).status_code == 202
        for _ in range(300):
            resent = (await api.get("/v1/subscriptions/audit/deliveries")).json()["items"]
            mine = next(d for d in resent if d["id"] == again["id"])
            if mine["tries"] == 2 and mine["status"] == "delivered":
                break
            await asyncio.sleep(0.05)
        assert (mine["tries"], mine["status"], mine["last_status"]) == (2, "delivered", 204)
        assert subscriber.handled() == handled


async def test_the_node_subscriber_refuses_a_request_whose_signature_does_not_verify(
        subscriber: Subscriber) -> None:
    body = orjson.dumps({"id": 7, "type": "execution.succeeded", "occurred_at": "2026-12-01T12:00:00Z",
                         "data": {"execution_id": "e"}})
    now = int(time.time())

    def headers(secret: str, timestamp: int = now) -> dict[str, str]:
        return {"content-type": "application/json", "webhook-id": "7", "webhook-timestamp": str(timestamp),
                "webhook-signature": sign_webhook(secret, "7", timestamp, body)}

    async with httpx.AsyncClient(timeout=10) as http:
        for case, sent in {"another secret": headers(new_handler_secret()),
                           "an old timestamp": headers(subscriber.secret, now - 3600),
                           "no signature": {"content-type": "application/json"}}.items():
            answer = await http.post(subscriber.url, content=body, headers=sent)
            assert answer.status_code == 401 and answer.text.startswith("signature not verified"), case
        accepted = await http.post(subscriber.url, content=body, headers=headers(subscriber.secret))
        assert accepted.status_code == 204
    await until(lambda: ["7", "execution.succeeded", "e"] in subscriber.handled(), what="the signed request handled")
