"""Strict, friendly input on the management routes (operations issue, item 6): a query parameter
the route does not declare → 422 naming it; a body not sent as JSON → 415 saying what is
expected; a batch with several invalid items names each (up to 100) in one 422. Callback routes
take a JSON body whatever its content type (handlers' HTTP clients differ)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx
import orjson
import pytest
from aiohttp import web

from app.db.database import Database
from tests.conftest import HandlerServer, RunningServer, problem_fields, register

FAR_FUTURE = "2999-01-01T00:00:00Z"
NOWHERE = "http://127.0.0.1:9/jobs"


@pytest.fixture
async def api(api_only_server: RunningServer, db: Database) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=api_only_server.url, timeout=30) as client:
        await register(client, "h", NOWHERE)
        yield client


def job(**fields: Any) -> dict[str, Any]:
    return {"handler": "h", "run_at": FAR_FUTURE, **fields}


async def chunked(body: bytes) -> AsyncIterator[bytes]:
    yield body  # no Content-Length: FastAPI's routing serves it, not the direct lane


def unknown_query(response: httpx.Response) -> list[tuple[str, str]]:
    problem_fields(response, 422)
    return [(e["field"], e["message"]) for e in response.json()["errors"]]


# --- unknown query parameters -------------------------------------------------------------

async def test_an_unknown_query_parameter_is_422_naming_it(api: httpx.AsyncClient) -> None:
    response = await api.get("/v1/executions", params={"limit": 5, "colour": "red"})
    assert unknown_query(response) == [("colour", "unknown query parameter")]


async def test_every_unknown_query_parameter_is_named(api: httpx.AsyncClient) -> None:
    response = await api.get("/v1/executions?sate=ENQUEUED&limit=5&page=2&page=3")
    assert unknown_query(response) == [("sate", "unknown query parameter"), ("page", "unknown query parameter")]


async def test_declared_query_parameters_are_still_taken(api: httpx.AsyncClient) -> None:
    response = await api.get("/v1/executions", params={"state": "ENQUEUED", "queue": "default", "limit": 5})
    assert response.status_code == 200, response.text
    assert (await api.get("/v1/handlers")).status_code == 200


@pytest.mark.parametrize("path", ["/v1/handlers", "/v1/queues", "/v1/nodes", "/v1/schedules",
                                  "/v1/executions/00000000-0000-0000-0000-000000000001"])
async def test_a_route_without_query_parameters_refuses_any(api: httpx.AsyncClient, path: str) -> None:
    assert unknown_query(await api.get(path, params={"verbose": "1"})) == [("verbose", "unknown query parameter")]


async def test_a_direct_route_refuses_unknown_query_parameters_both_ways(api: httpx.AsyncClient) -> None:
    body = orjson.dumps(job())
    headers = {"content-type": "application/json"}
    direct = await api.post("/v1/jobs?dry_run=1", content=body, headers=headers)
    framework = await api.post("/v1/jobs?dry_run=1", content=chunked(body), headers=headers)
    assert unknown_query(direct) == unknown_query(framework) == [("dry_run", "unknown query parameter")]
    assert (await api.get("/v1/executions")).json()["items"] == []


async def test_health_routes_are_not_management_routes(api: httpx.AsyncClient) -> None:
    assert (await api.get("/healthz", params={"probe": "k8s"})).status_code == 200


# --- content types ------------------------------------------------------------------------

@pytest.mark.parametrize("content_type", ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data",
                                          "application/xml", None])
async def test_a_body_not_sent_as_json_is_415_saying_what_is_expected(
        api: httpx.AsyncClient, content_type: str | None) -> None:
    headers = {"content-type": content_type} if content_type else {}
    response = await api.put("/v1/handlers/other", content=orjson.dumps({"url": NOWHERE}), headers=headers)
    assert problem_fields(response, 415) == []
    problem = response.json()
    assert problem["title"] == "Unsupported media type"
    assert "application/json" in problem["detail"]
    assert (repr(content_type) if content_type else "without a content-type") in problem["detail"]
    assert response.headers["accept"] == "application/json"
    assert (await api.get("/v1/handlers/other")).status_code == 404


@pytest.mark.parametrize("content_type", ["application/json", "application/json; charset=utf-8",
                                          "Application/JSON", "application/merge-patch+json"])
async def test_json_content_types_are_taken(api: httpx.AsyncClient, content_type: str) -> None:
    response = await api.put("/v1/handlers/other", content=orjson.dumps({"url": NOWHERE}),
                             headers={"content-type": content_type})
    assert response.status_code == 201, response.text


async def test_a_body_less_request_needs_no_content_type(api: httpx.AsyncClient) -> None:
    response = await api.post("/v1/jobs", json=job())
    assert response.status_code == 201, response.text
    cancel = await api.post(f"/v1/executions/{response.json()['id']}/cancel", headers={"content-type": "text/plain"})
    assert cancel.status_code == 200, cancel.text


async def test_the_api_key_is_checked_before_the_content_type(jobwire: Any) -> None:
    server = await jobwire(api_keys=["k1"])
    async with httpx.AsyncClient(base_url=server.url, timeout=10) as client:
        response = await client.post("/v1/jobs", content=b"handler=h", headers={"content-type": "text/plain"})
    assert response.status_code == 401


# --- batches: every invalid item named, up to 100 ----------------------------------------

async def test_a_batch_names_every_item_that_breaks_the_schema(api: httpx.AsyncClient) -> None:
    jobs = [job(), job(priority="high"), job(), job(max_attempts=0), job(colour="red")]
    response = await api.post("/v1/jobs/batch", json={"jobs": jobs})
    assert problem_fields(response, 422) == ["jobs[1].priority", "jobs[3].max_attempts", "jobs[4].colour"]


async def test_a_batch_names_every_item_postgresql_cannot_store(api: httpx.AsyncClient) -> None:
    jobs = [job(payload={"t": "\u0000"}), job(), job(metadata={"k": ["ok", "\u0000"]}), job(payload="\u0000")]
    response = await api.post("/v1/jobs/batch", json={"jobs": jobs})
    assert problem_fields(response, 422) == ["jobs[0].payload.t", "jobs[2].metadata.k[1]", "jobs[3].payload"]


async def test_a_batch_names_every_item_whose_handler_is_unknown(api: httpx.AsyncClient) -> None:
    jobs = [job(handler="ghost"), job(), job(handler="phantom"), job(handler="ghost")]
    response = await api.post("/v1/jobs/batch", json={"jobs": jobs})
    assert problem_fields(response, 422) == ["jobs[0].handler", "jobs[2].handler", "jobs[3].handler"]


@pytest.mark.parametrize("bad", [
    pytest.param({"priority": "high"}, id="schema"),
    pytest.param({"payload": "\u0000"}, id="unstorable"),
    pytest.param({"handler": "ghost"}, id="unknown-handler"),
])
async def test_a_batch_names_at_most_100_invalid_items(api: httpx.AsyncClient, bad: dict[str, Any]) -> None:
    response = await api.post("/v1/jobs/batch", json={"jobs": [job(**bad) for _ in range(150)]})
    fields = problem_fields(response, 422)
    assert len(fields) == 100
    assert fields[0].startswith("jobs[0].") and fields[99].startswith("jobs[99].")
    assert (await api.get("/v1/executions")).json()["items"] == []


# --- callbacks: JSON under any content type -----------------------------------------------

async def accept(_: web.Request, __: dict[str, Any]) -> web.StreamResponse:
    return web.Response(status=202)


@pytest.mark.parametrize("content_type", ["text/plain", "application/x-www-form-urlencoded", None])
async def test_callbacks_take_a_json_body_whatever_its_content_type(
        jobwire: Any, handler: HandlerServer, content_type: str | None) -> None:
    server = await jobwire()
    async with httpx.AsyncClient(base_url=server.url, timeout=10) as client:
        await register(client, "later", handler.route("/later", accept))
        assert (await client.post("/v1/jobs", json={"handler": "later"})).status_code == 201
        await handler.wait_for(1)
        sent = handler.received[0]
        headers = {"authorization": f"Bearer {sent['callback']['token']}",
                   **({"content-type": content_type} if content_type else {})}
        url = sent["callback"]["url"]
        progress = await client.post(f"{url}/progress", content=b'{"total": 4, "succeeded": 1}', headers=headers)
        assert progress.status_code == 200, progress.text
        logs = await client.post(f"{url}/logs", content=b'{"entries": [{"level": "INFO", "message": "hi"}]}',
                                 headers=headers)
        assert logs.status_code in (200, 201), logs.text
        malformed = await client.post(f"{url}/progress", content=b"total=4", headers=headers)
        assert problem_fields(malformed, 422) == ["body"]
        done = await client.post(f"{url}/complete", content=b'{"outcome": "succeeded", "result": 7}',
                                 headers=headers)
        assert done.status_code == 200, done.text
        assert done.json()["state"] == "SUCCEEDED" and done.json()["result"] == 7
