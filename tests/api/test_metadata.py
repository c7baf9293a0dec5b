"""Metadata: the `{"context": {...}}` document reaches the handler on every attempt, and a W3C
`traceparent` header on an enqueue is stored as metadata.context.traceparent unless the body
sets one (the body wins). An invalid header is ignored; the traceparent is not part of the
idempotency fingerprint (a retried request with a new span is still the same request)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from aiohttp import web

from app.db.database import Database
from tests.conftest import RunningServer, register, wait_for_state

TRACE = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
OTHER_SPAN = "00-4bf92f3577b34da6a3ce929d0e0e4736-b7ad6b7169203331-00"
FAR_FUTURE = "2999-01-01T00:00:00Z"


@pytest.fixture
async def client(api_only_server: RunningServer, db: Database) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=api_only_server.url, timeout=10) as c:
        await register(c, "h", "http://127.0.0.1:9/jobs")
        yield c


async def post(client: httpx.AsyncClient, body: dict[str, Any], traceparent: str | None = None,
               path: str = "/v1/jobs") -> httpx.Response:
    headers = {"traceparent": traceparent} if traceparent is not None else {}
    return await client.post(path, json=body, headers=headers)


async def test_a_valid_traceparent_header_is_stored_in_metadata_context(client) -> None:
    response = await post(client, {"handler": "h", "run_at": FAR_FUTURE, "metadata": {"team": "x"}}, TRACE)
    assert response.status_code == 201, response.text
    assert response.json()["metadata"] == {"team": "x", "context": {"traceparent": TRACE}}
    shown = (await client.get(f"/v1/executions/{response.json()['id']}")).json()
    assert shown["metadata"] == {"team": "x", "context": {"traceparent": TRACE}}


async def test_every_job_of_a_batch_gets_the_header(client) -> None:
    jobs = [{"handler": "h", "run_at": FAR_FUTURE},
            {"handler": "h", "run_at": FAR_FUTURE, "metadata": {"context": {"k": 1}}}]
    response = await post(client, {"jobs": jobs}, TRACE, "/v1/jobs/batch")
    assert response.status_code == 201, response.text
    assert [e["metadata"] for e in response.json()["items"]] == [
        {"context": {"traceparent": TRACE}}, {"context": {"k": 1, "traceparent": TRACE}}]


async def test_the_bodys_own_traceparent_wins_over_the_header(client) -> None:
    mine = {"context": {"traceparent": OTHER_SPAN, "user": 7}}
    response = await post(client, {"handler": "h", "run_at": FAR_FUTURE, "metadata": mine}, TRACE)
    assert response.status_code == 201, response.text
    assert response.json()["metadata"] == mine


@pytest.mark.parametrize("header", [
    pytest.param("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", id="unknown-version"),
    pytest.param("00-4BF92F3577B34DA6A3CE929D0E0E4736-00F067AA0BA902B7-01", id="upper-case-hex"),
    pytest.param("00-00000000000000000000000000000000-00f067aa0ba902b7-01", id="zero-trace-id"),
    pytest.param("00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01", id="zero-parent-id"),
    pytest.param("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7", id="no-flags"),
    pytest.param("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra", id="trailing-data"),
    pytest.param("garbage", id="garbage"),
    pytest.param("", id="empty"),
])
async def test_an_invalid_traceparent_header_is_ignored(client, header: str) -> None:
    response = await post(client, {"handler": "h", "run_at": FAR_FUTURE, "metadata": {"team": "x"}}, header)
    assert response.status_code == 201, response.text
    assert response.json()["metadata"] == {"team": "x"}
    bare = await post(client, {"handler": "h", "run_at": FAR_FUTURE}, header)
    assert bare.json()["metadata"] is None


async def test_a_retry_with_a_new_traceparent_is_the_same_idempotent_request(client) -> None:
    body = {"handler": "h", "run_at": FAR_FUTURE, "idempotency_key": "order-1", "payload": {"n": 1}}
    first = await post(client, body, TRACE)
    again = await post(client, body, OTHER_SPAN)
    without = await post(client, body)
    assert first.status_code == 201 and again.status_code == 200 and without.status_code == 200
    assert first.json()["id"] == again.json()["id"] == without.json()["id"]
    assert again.json()["metadata"] == {"context": {"traceparent": TRACE}}  # the first request's


async def test_metadata_and_traceparent_reach_the_handler_on_every_attempt(jobwire, handler) -> None:
    server = await jobwire()
    calls: list[dict[str, Any]] = []

    async def fail_once(_: web.Request, job: dict[str, Any]) -> web.StreamResponse:
        calls.append(job)
        return web.json_response(None, status=500 if len(calls) == 1 else 200)

    async with httpx.AsyncClient(base_url=server.url, timeout=10) as api:
        await register(api, "flaky", handler.route("/flaky", fail_once))
        job = (await post(api, {"handler": "flaky", "metadata": {"context": {"tenant": "acme"}}}, TRACE)).json()
        await wait_for_state(api, job["id"], "SUCCEEDED")
    assert [c["attempt"] for c in calls] == [0, 1]
    expected = {"context": {"tenant": "acme", "traceparent": TRACE}}
    assert [c["metadata"] for c in calls] == [expected, expected]
