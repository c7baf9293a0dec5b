"""The direct routes (app/api/direct.py) answer exactly as FastAPI's path does: the same request
sent with a Content-Length (served directly) and streamed in chunks (served by FastAPI's
routing, which the direct lane leaves it to) gets the same status and problem."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx
import orjson
import pytest

from app.api.app import create_api
from app.api.direct import direct_routes
from tests.conftest import register


async def chunked(body: bytes) -> AsyncIterator[bytes]:
    yield body  # a stream: httpx sends it with Transfer-Encoding: chunked, no Content-Length


async def both_ways(client: httpx.AsyncClient, path: str, document: Any,
                    headers: dict[str, str] | None = None) -> tuple[httpx.Response, httpx.Response]:
    body = orjson.dumps(document)
    headers = {"content-type": "application/json", **(headers or {})}
    direct = await client.post(path, content=body, headers=headers)
    framework = await client.post(path, content=chunked(body), headers=headers)
    assert "content-length" not in framework.request.headers
    return direct, framework


def shape(response: httpx.Response) -> tuple[int, list[str]]:
    body = response.json()
    return response.status_code, [e["field"] for e in body.get("errors", [])] if response.status_code >= 400 else []


def test_the_direct_routes_are_the_enqueue_the_batch_and_the_completion() -> None:
    routes = direct_routes(create_api(max_request_bytes=1))
    assert sorted((c.path_format, *sorted(c.methods)) for c, _ in routes) == [
        ("/v1/executions/{execution_id}/complete", "POST"), ("/v1/jobs", "POST"), ("/v1/jobs/batch", "POST")]


@pytest.fixture
async def keyed(jobwire: Any, handler: Any) -> AsyncIterator[httpx.AsyncClient]:
    server = await jobwire(api_keys=["secret-key"])
    async with httpx.AsyncClient(base_url=server.url, timeout=10,
                                 headers={"authorization": "Bearer secret-key"}) as client:
        await register(client, "h", handler.url)
        yield client


@pytest.mark.parametrize("document", [
    {"handler": "h", "run_at": "2999-01-01T00:00:00Z", "payload": {"n": 1}},
    {"handler": "h", "priority": "high"},
    {"handler": "nope"},
    {"handler": "h", "surprise": 1},
    [1, 2],
], ids=["valid", "bad-field", "unknown-handler", "unknown-field", "not-an-object"])
async def test_an_enqueue_is_answered_alike_both_ways(keyed: httpx.AsyncClient, document: Any) -> None:
    direct, framework = await both_ways(keyed, "/v1/jobs", document)
    assert shape(direct) == shape(framework)
    assert direct.status_code in (201, 422)


async def test_a_repeated_idempotency_key_is_answered_alike_both_ways(keyed: httpx.AsyncClient) -> None:
    document = {"handler": "h", "run_at": "2999-01-01T00:00:00Z"}
    first, again = await both_ways(keyed, "/v1/jobs", document, {"idempotency-key": "same"})
    assert (first.status_code, again.status_code) == (201, 200)
    assert first.json()["id"] == again.json()["id"]


async def test_a_batch_is_answered_alike_both_ways(keyed: httpx.AsyncClient) -> None:
    good = {"jobs": [{"handler": "h", "run_at": "2999-01-01T00:00:00Z"}] * 2}
    bad = {"jobs": [{"handler": "h"}, {"handler": "h", "max_attempts": 0}]}
    for document in (good, bad):
        direct, framework = await both_ways(keyed, "/v1/jobs/batch", document)
        assert shape(direct) == shape(framework)


async def test_a_missing_api_key_is_401_both_ways_before_the_body_is_read(keyed: httpx.AsyncClient) -> None:
    direct, framework = await both_ways(keyed, "/v1/jobs", {"handler": "h"}, {"authorization": ""})
    assert direct.status_code == framework.status_code == 401


@pytest.mark.parametrize(("execution", "authorization", "status"), [
    ("00000000-0000-0000-0000-000000000001", "", 401),
    ("00000000-0000-0000-0000-000000000001", "Bearer 0.forged", 403),
    ("not-a-uuid", "Bearer 0.forged", 422),
])
async def test_a_completion_is_answered_alike_both_ways(keyed: httpx.AsyncClient, execution: str,
                                                       authorization: str, status: int) -> None:
    direct, framework = await both_ways(keyed, f"/v1/executions/{execution}/complete", {"outcome": "succeeded"},
                                        {"authorization": authorization})
    assert shape(direct) == shape(framework)
    assert direct.status_code == status


async def test_a_request_with_a_content_length_skips_fastapis_routing_and_a_streamed_one_takes_it() -> None:
    """So the tests above compare two paths: the router sees only the streamed request."""
    app = create_api(max_request_bytes=1 << 20, api_keys=["k"])  # a bootstrap key: no database asked
    routed: list[str] = []
    router = app.router

    class Counting:
        def __getattr__(self, name: str) -> Any:
            return getattr(router, name)

        async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
            routed.append(scope["path"])
            await router(scope, receive, send)

    app.router = Counting()  # type: ignore[assignment]
    app.state.services = None  # no service is reached: the body is refused first (its handler too: not asked)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://jobwire") as client:
        direct, framework = await both_ways(client, "/v1/jobs", {"handler": "no such name", "priority": "high"},
                                            {"authorization": "Bearer k"})
    assert shape(direct) == shape(framework) == (422, ["handler", "priority"])
    assert routed == ["/v1/jobs"]  # once: the streamed request
