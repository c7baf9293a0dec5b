"""Reading executions (DESIGN §4): the listing's order, filters and cursor pagination, the
execution's shape, unknown ids and routes as problems, and the user's cancel and retry."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from datetime import datetime
from typing import Any

import httpx
import pytest

from tests.conftest import register

PROBLEM = "application/problem+json"
NOWHERE = "http://127.0.0.1:9/jobs"  # nothing listens on the discard port
FAR_FUTURE = "2999-01-01T00:00:00Z"  # keeps jobs ENQUEUED, never dispatched
EXECUTION_FIELDS = {
    "id", "job_id", "job_type", "handler", "queue", "state", "attempt", "max_attempts", "priority",
    "stateful", "payload", "parameters", "metadata", "result", "progress", "scheduled_at", "created_at",
    "started_at", "completed_at", "deadline_at", "locked_by", "last_error", "error_type", "concurrency_key", "workflow",
}


def assert_problem(response: httpx.Response, status: int) -> dict[str, Any]:
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == PROBLEM
    body = response.json()
    assert body["status"] == status and body["type"] and body["title"] and body["detail"]
    return body


@pytest.fixture
async def h(api: httpx.AsyncClient) -> AsyncIterator[str]:
    await register(api, "h", NOWHERE)
    yield "h"


async def enqueue(api: httpx.AsyncClient, **fields: Any) -> dict[str, Any]:
    response = await api.post("/v1/jobs", json={"handler": "h", "run_at": FAR_FUTURE, **fields})
    assert response.status_code == 201, response.text
    return response.json()


async def listed_ids(api: httpx.AsyncClient, **params: Any) -> list[str]:
    response = await api.get("/v1/executions", params=params)
    assert response.status_code == 200, response.text
    return [e["id"] for e in response.json()["items"]]


async def test_listing_is_newest_first(api: httpx.AsyncClient, h: str) -> None:
    ids = [(await enqueue(api, job_id=f"j{i}"))["id"] for i in range(4)]
    assert await listed_ids(api) == ids[::-1]


async def test_empty_listing_has_no_next_cursor(api: httpx.AsyncClient) -> None:
    response = await api.get("/v1/executions")
    assert response.status_code == 200
    assert response.json() == {"items": [], "next_cursor": None}


async def test_an_execution_is_shown_with_every_documented_field(api: httpx.AsyncClient, h: str) -> None:
    created = await enqueue(api, job_id="report-7", queue="reports", priority=3, payload={"a": [1, 2]},
                            parameters={"p": 1}, metadata={"team": "ops"}, max_attempts=2)
    shown = (await api.get(f"/v1/executions/{created['id']}")).json()
    assert set(shown) == EXECUTION_FIELDS
    assert shown == created
    assert shown["job_id"] == "report-7" and shown["queue"] == "reports" and shown["priority"] == 3
    assert shown["job_type"] == "DELAYED" and shown["state"] == "ENQUEUED"
    assert shown["attempt"] == 0 and shown["max_attempts"] == 2
    assert shown["payload"] == {"a": [1, 2]} and shown["parameters"] == {"p": 1}
    assert shown["metadata"] == {"team": "ops"}
    assert shown["result"] is None
    assert shown["progress"] is None
    assert shown["scheduled_at"] == "2999-01-01T00:00:00Z"
    assert shown["created_at"].endswith("Z")
    assert datetime.fromisoformat(shown["created_at"]).utcoffset().total_seconds() == 0
    assert shown["started_at"] is None and shown["completed_at"] is None and shown["locked_by"] is None


async def test_job_id_defaults_to_the_execution_id(api: httpx.AsyncClient, h: str) -> None:
    created = await enqueue(api)
    assert created["job_id"] == created["id"]


async def test_listing_filters_by_state_queue_handler_and_job_id(api: httpx.AsyncClient, h: str) -> None:
    await register(api, "other", NOWHERE)
    a = await enqueue(api, job_id="alpha", queue="q1")
    b = await enqueue(api, job_id="beta", queue="q2")
    c = await enqueue(api, job_id="alpha", queue="q2", handler="other")
    assert (await api.post(f"/v1/executions/{b['id']}/cancel")).status_code == 200

    assert await listed_ids(api, state="CANCELLED") == [b["id"]]
    assert await listed_ids(api, state="ENQUEUED") == [c["id"], a["id"]]
    assert await listed_ids(api, state="SUCCEEDED") == []
    assert await listed_ids(api, queue="q2") == [c["id"], b["id"]]
    assert await listed_ids(api, handler="other") == [c["id"]]
    assert await listed_ids(api, handler="h") == [b["id"], a["id"]]
    assert await listed_ids(api, job_id="alpha") == [c["id"], a["id"]]
    assert await listed_ids(api, job_id="alpha", queue="q2", state="ENQUEUED") == [c["id"]]
    assert await listed_ids(api, queue="nowhere") == []


async def test_listing_by_job_id_finds_a_one_off_job_by_its_own_id_and_the_jobs_that_took_it(
        api: httpx.AsyncClient, h: str) -> None:
    """A one-off job's job_id is its id (kept out of the job_id index, found by the primary key);
    a caller may give another job that id as its job_id, or the same id in capitals: each listing
    by job_id names exactly the executions whose job_id is that text."""
    one_off = await enqueue(api)
    took_it = await enqueue(api, job_id=one_off["id"])
    shouted = await enqueue(api, job_id=one_off["id"].upper())
    unrelated = await enqueue(api)

    assert await listed_ids(api, job_id=one_off["id"]) == [took_it["id"], one_off["id"]]
    assert await listed_ids(api, job_id=one_off["id"].upper()) == [shouted["id"]]
    assert await listed_ids(api, job_id=unrelated["id"]) == [unrelated["id"]]
    assert await listed_ids(api, job_id=str(uuid.uuid4())) == []
    assert await listed_ids(api, job_id=one_off["id"], state="ENQUEUED", queue="default") == [
        took_it["id"], one_off["id"]]


async def walk(api: httpx.AsyncClient, limit: int, **params: Any) -> tuple[list[str], int]:
    """Every id the listing yields, following next_cursor; returns (ids, page count)."""
    ids: list[str] = []
    cursor: str | None = None
    pages = 0
    while True:
        query = {"limit": limit, **params, **({"cursor": cursor} if cursor else {})}
        response = await api.get("/v1/executions", params=query)
        assert response.status_code == 200, response.text
        page = response.json()
        pages += 1
        assert len(page["items"]) <= limit
        ids += [e["id"] for e in page["items"]]
        cursor = page["next_cursor"]
        if cursor is None:
            return ids, pages
        assert pages < 100, "the cursor never ends"


async def test_pagination_walks_every_item_exactly_once_in_listing_order(api: httpx.AsyncClient, h: str) -> None:
    # A batch shares one created_at: the walk must order ties by id, not skip or repeat them.
    batch = await api.post("/v1/jobs/batch", json={"jobs": [{"handler": "h", "run_at": FAR_FUTURE}] * 7})
    assert batch.status_code == 201, batch.text
    singles = [(await enqueue(api))["id"] for _ in range(3)]
    everything = await listed_ids(api, limit=500)
    assert len(everything) == 10
    assert everything[:3] == singles[::-1]
    for limit in (1, 3, 5, 10):
        ids, pages = await walk(api, limit)
        assert ids == everything
        assert pages == -(-10 // limit)  # a full last page already says next_cursor: null


async def test_pagination_keeps_the_filter(api: httpx.AsyncClient, h: str) -> None:
    mine = [(await enqueue(api, queue="mine"))["id"] for _ in range(5)]
    for _ in range(4):
        await enqueue(api, queue="theirs")
    ids, _ = await walk(api, 2, queue="mine")
    assert ids == mine[::-1]


async def test_last_page_has_null_next_cursor(api: httpx.AsyncClient, h: str) -> None:
    for _ in range(3):
        await enqueue(api)
    first = (await api.get("/v1/executions", params={"limit": 2})).json()
    assert len(first["items"]) == 2 and isinstance(first["next_cursor"], str)
    second = (await api.get("/v1/executions", params={"limit": 2, "cursor": first["next_cursor"]})).json()
    assert len(second["items"]) == 1 and second["next_cursor"] is None
    exact = (await api.get("/v1/executions", params={"limit": 3})).json()
    assert len(exact["items"]) == 3 and exact["next_cursor"] is None


async def test_default_limit_is_50(api: httpx.AsyncClient, h: str) -> None:
    batch = await api.post("/v1/jobs/batch", json={"jobs": [{"handler": "h", "run_at": FAR_FUTURE}] * 51})
    assert batch.status_code == 201, batch.text
    page = (await api.get("/v1/executions")).json()
    assert len(page["items"]) == 50 and page["next_cursor"] is not None
    assert len((await api.get("/v1/executions", params={"limit": 500})).json()["items"]) == 51


async def test_unknown_execution_is_404_problem(api: httpx.AsyncClient) -> None:
    missing = uuid.uuid4()
    for method, path in (("GET", f"/v1/executions/{missing}"), ("POST", f"/v1/executions/{missing}/cancel"),
                         ("POST", f"/v1/executions/{missing}/retry")):
        body = assert_problem(await api.request(method, path), 404)
        assert str(missing) in body["detail"]


@pytest.mark.parametrize(("method", "path"), [
    ("GET", "/nope"),
    ("GET", "/v1"),
    ("GET", "/v1/jobs/extra/segments"),
    ("POST", "/v1/executions/00000000-0000-4000-8000-000000000000/unknown"),
])
async def test_unknown_route_is_404_problem(api: httpx.AsyncClient, method: str, path: str) -> None:
    assert_problem(await api.request(method, path), 404)


@pytest.mark.parametrize(("method", "path"), [
    ("GET", "/v1/jobs"),
    ("DELETE", "/v1/jobs"),
    ("PATCH", "/v1/handlers/h"),
    ("POST", "/v1/handlers/h"),
    ("DELETE", "/v1/executions"),
    ("GET", "/v1/executions/00000000-0000-4000-8000-000000000000/cancel"),
])
async def test_wrong_method_is_405_problem(api: httpx.AsyncClient, method: str, path: str) -> None:
    response = await api.request(method, path)
    assert_problem(response, 405)
    assert response.headers.get("allow")


async def test_cancel_of_a_future_job_is_200_cancelled_then_409(api: httpx.AsyncClient, h: str) -> None:
    created = await enqueue(api)
    cancelled = await api.post(f"/v1/executions/{created['id']}/cancel")
    assert cancelled.status_code == 200, cancelled.text
    assert cancelled.json()["state"] == "CANCELLED"
    assert cancelled.json()["id"] == created["id"]
    assert (await api.get(f"/v1/executions/{created['id']}")).json()["state"] == "CANCELLED"
    again = assert_problem(await api.post(f"/v1/executions/{created['id']}/cancel"), 409)
    assert "CANCELLED" in again["detail"]


async def test_retry_of_an_enqueued_job_is_409(api: httpx.AsyncClient, h: str) -> None:
    created = await enqueue(api)
    body = assert_problem(await api.post(f"/v1/executions/{created['id']}/retry"), 409)
    assert "ENQUEUED" in body["detail"]
    shown = (await api.get(f"/v1/executions/{created['id']}")).json()
    assert shown["state"] == "ENQUEUED" and shown["attempt"] == 0


async def test_retry_of_a_cancelled_job_enqueues_a_new_attempt_now(api: httpx.AsyncClient, h: str) -> None:
    created = await enqueue(api)
    await api.post(f"/v1/executions/{created['id']}/cancel")
    retried = await api.post(f"/v1/executions/{created['id']}/retry")
    assert retried.status_code == 200, retried.text
    body = retried.json()
    assert body["attempt"] == 1
    assert body["state"] in {"ENQUEUED", "PROCESSING", "FAILED"}  # a dispatcher may already hold it
    assert datetime.fromisoformat(body["scheduled_at"]) < datetime.fromisoformat(FAR_FUTURE)
