"""The routes served below the framework (app/api/hot.py) answer exactly as the FastAPI routes
they stand in for. A body sent as `application/json` takes the hot route; the same body as
another JSON media type (`…+json`) goes to FastAPI: both must store and answer alike."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx
import orjson
import pytest

from app.db.database import Database
from tests.conftest import RunningServer, problem_fields, register

HOT, FRAMEWORK = "application/json", "application/vnd.jobwire+json"
MINTED = {"id", "job_id", "created_at", "scheduled_at"}  # differ between any two enqueues


@pytest.fixture
async def api(api_only_server: RunningServer, db: Database) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=api_only_server.url, timeout=10) as client:
        await register(client, "h", "http://127.0.0.1:9/jobs")
        yield client


async def post(api: httpx.AsyncClient, path: str, body: Any, content_type: str,
               **headers: str) -> httpx.Response:
    return await api.post(path, content=orjson.dumps(body), headers={"content-type": content_type, **headers})


def without_minted(view: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in view.items() if k not in MINTED}


async def test_an_enqueue_answers_alike_on_both_routes(api: httpx.AsyncClient) -> None:
    body = {"handler": "h", "queue": "q", "priority": 3, "payload": {"n": [1, "two", None]},
            "parameters": {"p": 1}, "metadata": {"m": True}, "run_at": "2999-01-01T00:00:00+02:00",
            "max_attempts": 2}
    trace = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
    hot = await post(api, "/v1/jobs", body, HOT, traceparent=trace)
    framework = await post(api, "/v1/jobs", body, FRAMEWORK, traceparent=trace)
    assert hot.status_code == framework.status_code == 201, (hot.text, framework.text)
    assert hot.headers["content-type"] == framework.headers["content-type"] == "application/json"
    assert without_minted(hot.json()) == without_minted(framework.json())
    assert hot.json()["metadata"] == {"m": True, "context": {"traceparent": trace}}
    assert hot.json()["scheduled_at"] == framework.json()["scheduled_at"] == "2998-12-31T22:00:00Z"


async def test_an_idempotent_repeat_is_200_on_either_route(api: httpx.AsyncClient) -> None:
    body = {"handler": "h", "run_at": "2999-01-01T00:00:00Z"}
    first = await post(api, "/v1/jobs", body, HOT, **{"idempotency-key": "k-1"})
    again = await post(api, "/v1/jobs", body, FRAMEWORK, **{"idempotency-key": "k-1"})
    third = await post(api, "/v1/jobs", body, HOT, **{"idempotency-key": "k-1"})
    assert (first.status_code, again.status_code, third.status_code) == (201, 200, 200)
    assert first.json() == again.json() == third.json()


async def test_a_batch_answers_alike_on_both_routes(api: httpx.AsyncClient) -> None:
    body = {"jobs": [{"handler": "h", "run_at": "2999-01-01T00:00:00Z", "payload": i} for i in range(3)]}
    hot = await post(api, "/v1/jobs/batch", body, HOT)
    framework = await post(api, "/v1/jobs/batch", body, FRAMEWORK)
    assert hot.status_code == framework.status_code == 201, (hot.text, framework.text)
    assert ([without_minted(v) for v in hot.json()["items"]]
            == [without_minted(v) for v in framework.json()["items"]])


async def test_a_refusal_the_service_raises_is_the_same_problem_on_both_routes(api: httpx.AsyncClient) -> None:
    # Valid JSON for the model, refused by the database function: the hot route words it itself.
    body = {"handler": "nobody", "run_at": "2999-01-01T00:00:00Z"}
    hot = await post(api, "/v1/jobs", body, HOT)
    framework = await post(api, "/v1/jobs", body, FRAMEWORK)
    assert problem_fields(hot, 422) == problem_fields(framework, 422) == ["handler"]
    assert hot.json() == framework.json()


async def test_a_completion_for_an_unknown_execution_is_the_same_problem_on_both_routes(
        api: httpx.AsyncClient) -> None:
    path = "/v1/executions/00000000-0000-4000-8000-000000000000/complete"
    for headers in ({}, {"authorization": "Bearer forged"}):
        hot = await post(api, path, {"outcome": "succeeded"}, HOT, **headers)
        framework = await post(api, path, {"outcome": "succeeded"}, FRAMEWORK, **headers)
        assert hot.status_code == framework.status_code and hot.status_code in (401, 403)
        assert hot.json() == framework.json()
        assert hot.headers.get("www-authenticate") == framework.headers.get("www-authenticate")
