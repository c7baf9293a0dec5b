"""The routes every job passes through, POST /v1/jobs, /v1/jobs/batch and …/complete (DESIGN §4,
§5): what they store and answer, on any JSON media type, and how they refuse."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx
import orjson
import pytest

from app.db.database import Database
from tests.conftest import RunningServer, problem_fields, register

JSON_TYPES = ["application/json", "application/vnd.jobwire+json", "application/json; charset=utf-8"]
MINTED = {"id", "job_id", "created_at", "scheduled_at"}  # differ between any two enqueues
TRACE = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
UNKNOWN = "00000000-0000-4000-8000-000000000000"


@pytest.fixture
async def api(api_only_server: RunningServer, db: Database) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=api_only_server.url, timeout=10) as client:
        await register(client, "h", "http://127.0.0.1:9/jobs")
        yield client


async def post(api: httpx.AsyncClient, path: str, body: Any, content_type: str = "application/json",
               **headers: str) -> httpx.Response:
    return await api.post(path, content=orjson.dumps(body), headers={"content-type": content_type, **headers})


def without_minted(view: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in view.items() if k not in MINTED}


async def test_an_enqueue_answers_201_with_the_execution_it_stored(api: httpx.AsyncClient) -> None:
    body = {"handler": "h", "queue": "q", "priority": 3, "payload": {"n": [1, "two", None]},
            "parameters": {"p": 1}, "metadata": {"m": True}, "run_at": "2999-01-01T00:00:00+02:00",
            "max_attempts": 2}
    created = await post(api, "/v1/jobs", body, traceparent=TRACE)
    assert created.status_code == 201, created.text
    assert created.headers["content-type"] == "application/json"
    view = created.json()
    assert view["job_id"] == view["id"]
    assert view["scheduled_at"] == "2998-12-31T22:00:00Z"
    assert without_minted(view) == {
        "job_type": "DELAYED", "handler": "h", "queue": "q", "state": "ENQUEUED", "attempt": 0,
        "max_attempts": 2, "priority": 3, "stateful": False, "payload": {"n": [1, "two", None]},
        "parameters": {"p": 1}, "metadata": {"m": True, "context": {"traceparent": TRACE}}, "result": None,
        "progress": None,
        "started_at": None, "completed_at": None, "deadline_at": None, "locked_by": None,
        "last_error": None, "error_type": None, "concurrency_key": None, "workflow": None,
    }
    assert (await api.get(f"/v1/executions/{view['id']}")).json() == view


@pytest.mark.parametrize("content_type", JSON_TYPES)
async def test_every_json_media_type_is_taken_alike(api: httpx.AsyncClient, content_type: str) -> None:
    body = {"handler": "h", "payload": {"n": 1}, "run_at": "2999-01-01T00:00:00Z"}
    one = await post(api, "/v1/jobs", body, content_type)
    batch = await post(api, "/v1/jobs/batch", {"jobs": [body, body]}, content_type)
    assert (one.status_code, batch.status_code) == (201, 201), (one.text, batch.text)
    assert [without_minted(v) for v in batch.json()["items"]] == [{**without_minted(one.json()), "created": True}] * 2


async def test_an_idempotent_repeat_is_200_with_the_first_execution(api: httpx.AsyncClient) -> None:
    body = {"handler": "h", "run_at": "2999-01-01T00:00:00Z"}
    first = await post(api, "/v1/jobs", body, **{"idempotency-key": "k-1"})
    again = await post(api, "/v1/jobs", body, "application/vnd.jobwire+json", **{"idempotency-key": "k-1"})
    third = await post(api, "/v1/jobs", {**body, "idempotency_key": "k-1"})
    assert (first.status_code, again.status_code, third.status_code) == (201, 200, 200)
    assert first.json() == again.json() == third.json()


async def test_a_batch_answers_its_executions_in_the_order_sent(api: httpx.AsyncClient) -> None:
    body = {"jobs": [{"handler": "h", "run_at": "2999-01-01T00:00:00Z", "payload": i} for i in range(3)]}
    created = await post(api, "/v1/jobs/batch", body, traceparent=TRACE)
    assert created.status_code == 201, created.text
    items = created.json()["items"]
    assert [item["payload"] for item in items] == [0, 1, 2]
    assert {item["metadata"]["context"]["traceparent"] for item in items} == {TRACE}
    assert len({item["id"] for item in items}) == 3
    assert [item["created"] for item in items] == [True] * 3


async def test_a_batch_says_which_items_an_idempotency_key_found(api: httpx.AsyncClient) -> None:
    job = {"handler": "h", "run_at": "2999-01-01T00:00:00Z"}
    first = await post(api, "/v1/jobs", {**job, "idempotency_key": "seen"})
    batch = await post(api, "/v1/jobs/batch", {"jobs": [{**job, "idempotency_key": "seen"},
                                                        {**job, "idempotency_key": "new"},
                                                        {**job, "idempotency_key": "new"}]})
    assert batch.status_code == 201, batch.text
    items = batch.json()["items"]
    assert [item["created"] for item in items] == [False, True, False]
    assert items[0]["id"] == first.json()["id"] and items[1]["id"] == items[2]["id"]


@pytest.mark.parametrize("prefer", ["return=minimal", "respond-async, RETURN = \"Minimal\"; x=1",
                                    "handling=lenient, return=minimal"])
async def test_a_batch_asking_return_minimal_answers_its_ids_in_item_order(api: httpx.AsyncClient,
                                                                         prefer: str) -> None:
    job = {"handler": "h", "run_at": "2999-01-01T00:00:00Z"}
    first = await post(api, "/v1/jobs", {**job, "idempotency_key": "seen"})
    body = {"jobs": [{**job, "payload": 0}, {**job, "idempotency_key": "seen"}, {**job, "payload": 2}]}
    created = await post(api, "/v1/jobs/batch", body, prefer=prefer)
    assert created.status_code == 201, created.text
    assert created.headers["preference-applied"] == "return=minimal"
    ids = created.json()["ids"]
    assert list(created.json()) == ["ids"] and len(ids) == 3 and ids[1] == first.json()["id"]
    stored = [(await api.get(f"/v1/executions/{i}")).json() for i in ids]
    assert [s["payload"] for s in stored] == [0, None, 2]


@pytest.mark.parametrize("prefer", [None, "return=representation", "returnx=minimal", "return=minimalist"])
async def test_a_batch_without_return_minimal_answers_its_executions(api: httpx.AsyncClient,
                                                                     prefer: str | None) -> None:
    headers = {} if prefer is None else {"prefer": prefer}
    created = await post(api, "/v1/jobs/batch", {"jobs": [{"handler": "h", "run_at": "2999-01-01T00:00:00Z"}]},
                         **headers)
    assert created.status_code == 201 and "preference-applied" not in created.headers
    assert [item["created"] for item in created.json()["items"]] == [True]


async def test_a_refused_batch_asking_return_minimal_is_the_same_422_and_stores_nothing(
        api: httpx.AsyncClient) -> None:
    body = {"jobs": [{"handler": "h"}, {"handler": "nobody"}, {"handler": "h", "priority": "high"}]}
    refused = await post(api, "/v1/jobs/batch", body, prefer="return=minimal")
    assert problem_fields(refused, 422) == ["jobs[1].handler", "jobs[2].priority"]
    assert (await api.get("/v1/executions")).json()["items"] == []


async def test_an_unknown_handler_is_422_naming_the_field(api: httpx.AsyncClient) -> None:
    # Valid for the model, refused by the database function.
    body = {"handler": "nobody", "run_at": "2999-01-01T00:00:00Z"}
    assert problem_fields(await post(api, "/v1/jobs", body), 422) == ["handler"]
    assert problem_fields(await post(api, "/v1/jobs/batch", {"jobs": [body]}), 422) == ["jobs[0].handler"]
    assert (await api.get("/v1/executions")).json()["items"] == []


async def test_a_completion_without_a_valid_token_is_refused(api: httpx.AsyncClient) -> None:
    path = f"/v1/executions/{UNKNOWN}/complete"
    missing = await post(api, path, {"outcome": "succeeded"})
    problem_fields(missing, 401)
    assert missing.headers["www-authenticate"] == "Bearer"
    forged = await post(api, path, {"outcome": "succeeded"}, authorization="Bearer forged")
    problem_fields(forged, 403)


async def test_a_completion_for_a_malformed_id_is_422(api: httpx.AsyncClient) -> None:
    response = await post(api, "/v1/executions/not-a-uuid/complete", {"outcome": "succeeded"})
    assert problem_fields(response, 422) == ["execution_id"]
