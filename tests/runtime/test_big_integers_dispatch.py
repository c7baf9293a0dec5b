"""Numbers arrive as sent, through a live server and a real handler: an integer beyond 64 bits
reaches the handler with its exact digits, and comes back exactly in a handler's synchronous
reply, a completion callback (on either route) and a step's result."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from aiohttp import web

from tests.conftest import HandlerServer, register, wait_for_state

BIG = 123456789012345678901234567890


async def accept(_: web.Request, __: dict[str, Any]) -> web.StreamResponse:
    return web.Response(status=202)


def reply_with(body: str):
    async def reply(_: web.Request, __: dict[str, Any]) -> web.StreamResponse:
        return web.Response(body=body.encode(), content_type="application/json")
    return reply


async def enqueue(api: httpx.AsyncClient, body: str) -> dict[str, Any]:
    response = await api.post("/v1/jobs", content=body.encode(), headers={"content-type": "application/json"})
    assert response.status_code == 201, response.text
    return response.json()


async def test_an_integer_beyond_64_bits_in_a_payload_is_dispatched_exactly(api, handler: HandlerServer) -> None:
    await register(api, "later", handler.route("/later", accept))
    await enqueue(api, f'{{"handler":"later","payload":{{"n":{BIG},"neg":{-BIG}}},"parameters":{{"p":{2**64}}},'
                       f'"metadata":{{"m":{-(2**63) - 1}}}}}')
    await handler.wait_for(1)
    body = json.loads(handler.bodies[0])  # the standard library's parser keeps every integer exact
    assert body["payload"] == {"n": BIG, "neg": -BIG}
    assert body["parameters"] == {"p": 2**64}
    assert body["metadata"]["m"] == -(2**63) - 1
    assert str(BIG).encode() in handler.bodies[0] and str(-BIG).encode() in handler.bodies[0]


async def test_a_handlers_synchronous_result_with_a_big_integer_is_stored_and_shown_exactly(
        api, handler: HandlerServer) -> None:
    await register(api, "echo", handler.route("/echo", reply_with(f'{{"result": {{"list": [{-BIG}], "n": {BIG}}}}}')))
    job = await enqueue(api, '{"handler":"echo","payload":{"i":1}}')
    await wait_for_state(api, job["id"], "SUCCEEDED")
    shown = await api.get(f"/v1/executions/{job['id']}")
    # jsonb orders an object's keys (shorter first): "n" before "list".
    assert f'"result":{{"n":{BIG},"list":[{-BIG}]}}' in shown.text


async def test_a_synchronous_result_that_is_one_big_integer_is_stored_exactly(api, handler: HandlerServer) -> None:
    await register(api, "echo", handler.route("/echo", reply_with(f'{{"result": {2**64}}}')))
    job = await enqueue(api, '{"handler":"echo"}')
    await wait_for_state(api, job["id"], "SUCCEEDED")
    assert f'"result":{2**64},' in (await api.get(f"/v1/executions/{job['id']}")).text


@pytest.mark.parametrize("content_type", ["application/json", "application/vnd.jobwire+json"])
async def test_a_completion_callbacks_result_with_a_big_integer_is_stored_and_shown_exactly(
        api, handler: HandlerServer, content_type: str) -> None:
    await register(api, "later", handler.route("/later", accept))
    job = await enqueue(api, '{"handler":"later"}')
    await handler.wait_for(1)
    sent = handler.received[0]
    completed = await api.post(
        f"{sent['callback']['url']}/complete",
        content=f'{{"outcome": "succeeded", "result": {{"n": {BIG}, "neg": {-BIG}}}}}'.encode(),
        headers={"content-type": content_type, "authorization": f"Bearer {sent['callback']['token']}"})
    assert completed.status_code == 200, completed.text
    assert f'"result":{{"n":{BIG},"neg":{-BIG}}}' in completed.text
    assert (await wait_for_state(api, job["id"], "SUCCEEDED"))["result"] == {"n": BIG, "neg": -BIG}
    assert f'"result":{{"n":{BIG},"neg":{-BIG}}}' in (await api.get(f"/v1/executions/{job['id']}")).text


async def test_a_steps_result_with_a_big_integer_is_replayed_exactly(api, handler: HandlerServer) -> None:
    await register(api, "later", handler.route("/later", accept))
    await enqueue(api, '{"handler":"later"}')
    await handler.wait_for(1)
    sent = handler.received[0]
    headers = {"content-type": "application/json", "authorization": f"Bearer {sent['callback']['token']}"}
    stored = await api.put(f"{sent['callback']['url']}/steps/charge", content=f'{{"result": {{"n": {BIG}}}}}'.encode(),
                           headers=headers)
    assert stored.status_code == 201, stored.text
    replayed = await api.get(f"{sent['callback']['url']}/steps/charge", headers=headers)
    assert f'"result":{{"n":{BIG}}}' in replayed.text
