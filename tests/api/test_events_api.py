"""GET /v1/executions/{id}/events and /attempts over HTTP: the events' shape and paging (keyset on
the event id, next_cursor null on the last page), unknown and malformed ids, crafted cursors
(422 naming `cursor`, never a 500) and limits. The history is written through the repository
on an API-only server (no dispatcher), so nothing moves while a test reads it."""

from __future__ import annotations

import base64
import uuid
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from app.db.database import Database
from app.db.executions import ExecutionRepository
from app.domain.states import JobState
from tests.conftest import RunningServer, problem_fields, register

NOWHERE = "http://127.0.0.1:9/jobs"  # nothing listens on the discard port
UNKNOWN = "00000000-0000-0000-0000-000000000001"
CURATED = {"execution_id", "job_id", "job_type", "queue", "handler", "new_state", "attempt", "max_attempts",
           "error_type", "scheduled_at", "created_at", "started_at", "completed_at", "metadata"}
repo = ExecutionRepository()


@pytest.fixture
async def api(api_only_server: RunningServer, db: Database) -> AsyncIterator[httpx.AsyncClient]:
    """One API-only server for the module; `db` empties the tables before each test."""
    async with httpx.AsyncClient(base_url=api_only_server.url, timeout=10) as client:
        await register(client, "h", NOWHERE)
        yield client


def b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


async def spent_then_retried_then_cancelled(api: httpx.AsyncClient, db: Database) -> str:
    """Three failed attempts (the last dead-lettered), a manual retry, a cancel: six typed events."""
    created = await api.post("/v1/jobs", json={"handler": "h", "max_attempts": 3, "metadata": {"team": "ops"},
                                               "payload": {"secret": 1}})
    assert created.status_code == 201, created.text
    execution_id = created.json()["id"]
    for attempt in range(3):
        async with db.transaction() as conn:
            [claimed] = await repo.claim(conn, "node-1", 1, [], default_timeout=60.0)
            assert (str(claimed.id), claimed.attempt) == (execution_id, attempt)
            assert await repo.fail(conn, claimed.id, attempt, cause=JobState.FAILED, error=f"HTTP 500: boom {attempt}",
                                   error_type="http_status", retryable=True, delay=0.0,
                                   http_status=500) is not None
    assert (await api.post(f"/v1/executions/{execution_id}/retry")).status_code == 200
    assert (await api.post(f"/v1/executions/{execution_id}/cancel")).status_code == 200
    return execution_id


async def all_pages(api: httpx.AsyncClient, execution_id: str, limit: int) -> tuple[list[dict[str, Any]], int]:
    items: list[dict[str, Any]] = []
    cursor: str | None = None
    pages = 0
    while True:
        params: dict[str, Any] = {"limit": limit, **({"cursor": cursor} if cursor else {})}
        response = await api.get(f"/v1/executions/{execution_id}/events", params=params)
        assert response.status_code == 200, response.text
        page = response.json()
        pages += 1
        assert len(page["items"]) <= limit
        items += page["items"]
        cursor = page["next_cursor"]
        if cursor is None:
            return items, pages
        assert pages < 20, "the cursor never ends"


async def test_events_are_the_typed_transitions_oldest_first(api: httpx.AsyncClient, db: Database) -> None:
    execution_id = await spent_then_retried_then_cancelled(api, db)
    response = await api.get(f"/v1/executions/{execution_id}/events")
    assert response.status_code == 200
    body = response.json()
    assert body["next_cursor"] is None
    items = body["items"]
    assert [e["type"] for e in items] == ["execution.failed", "execution.failed", "execution.failed",
                                          "execution.dead_lettered", "execution.retried", "execution.cancelled"]
    assert [(e["data"]["new_state"], e["data"]["attempt"]) for e in items] == [
        ("FAILED", 0), ("FAILED", 1), ("FAILED", 2), ("DEAD_LETTER", 2), ("ENQUEUED", 3), ("CANCELLED", 3)]
    for event in items:
        assert set(event) == {"id", "type", "occurred_at", "data"}
        assert set(event["data"]) - {"retry_at"} == CURATED  # no payload, result, error text, parameters
        assert event["data"]["execution_id"] == execution_id and event["data"]["metadata"] == {"team": "ops"}
    assert [e["id"] for e in items] == sorted(e["id"] for e in items)
    assert ["retry_at" in e["data"] for e in items] == [True, True, False, False, False, False]


async def test_events_page_by_cursor_to_a_null_next_cursor(api: httpx.AsyncClient, db: Database) -> None:
    execution_id = await spent_then_retried_then_cancelled(api, db)
    everything, _ = await all_pages(api, execution_id, 500)
    assert len(everything) == 6
    for limit, expected_pages in ((1, 6), (2, 3), (4, 2), (6, 1)):
        items, pages = await all_pages(api, execution_id, limit)
        assert items == everything and pages == expected_pages  # a full last page already says null


async def test_attempts_of_a_retried_then_cancelled_execution(api: httpx.AsyncClient, db: Database) -> None:
    execution_id = await spent_then_retried_then_cancelled(api, db)
    response = await api.get(f"/v1/executions/{execution_id}/attempts")
    assert response.status_code == 200
    items = response.json()["items"]
    # The cancel came while the retry was ENQUEUED: it ended no attempt.
    assert [(a["attempt"], a["state"], a["node"], a["http_status"], a["error"]) for a in items] == [
        (n, "FAILED", "node-1", 500, f"HTTP 500: boom {n}") for n in range(3)]


async def test_an_execution_without_attempts_or_events_has_empty_lists(api: httpx.AsyncClient) -> None:
    created = (await api.post("/v1/jobs", json={"handler": "h", "run_at": "2999-01-01T00:00:00Z"})).json()
    assert (await api.get(f"/v1/executions/{created['id']}/attempts")).json() == {"items": []}
    assert (await api.get(f"/v1/executions/{created['id']}/events")).json() == {"items": [], "next_cursor": None}


@pytest.mark.parametrize("route", ["attempts", "events"])
async def test_an_unknown_execution_is_404(api: httpx.AsyncClient, route: str) -> None:
    assert problem_fields(await api.get(f"/v1/executions/{UNKNOWN}/{route}"), 404) == []
    random = uuid.uuid4()
    assert problem_fields(await api.get(f"/v1/executions/{random}/{route}"), 404) == []


@pytest.mark.parametrize("route", ["attempts", "events"])
async def test_a_malformed_execution_id_is_422(api: httpx.AsyncClient, route: str) -> None:
    assert problem_fields(await api.get(f"/v1/executions/not-a-uuid/{route}"), 422) == ["execution_id"]


@pytest.mark.parametrize("cursor", [
    pytest.param("garbage!", id="not-base64"),
    pytest.param("é", id="non-ascii"),
    pytest.param(b64(b"not json"), id="not-json"),
    pytest.param(b64(b"\xff\xfe"), id="not-utf8"),
    pytest.param(b64(b"[1]"), id="a-list"),
    pytest.param(b64(b'"event"'), id="a-string"),
    pytest.param(b64(b"7"), id="a-number"),
    pytest.param(b64(b'{"event": "7"}'), id="id-a-string"),
    pytest.param(b64(b'{"event": true}'), id="id-a-bool"),
    pytest.param(b64(b'{"event": 7.0}'), id="id-a-float"),
    pytest.param(b64(b'{"event": -1}'), id="id-negative"),
    pytest.param(b64(b'{"event": 9223372036854775808}'), id="id-past-bigint"),
    pytest.param(b64(b'{"event": [7]}'), id="id-a-list"),
    pytest.param(b64(b'{"log": 7}'), id="a-log-cursor"),
    pytest.param(b64(b'["2024-01-01T00:00:00+00:00", "00000000-0000-0000-0000-000000000000"]'),
                 id="a-listing-cursor"),
    pytest.param("a" * 201, id="too-long"),
])
async def test_a_crafted_events_cursor_is_422_naming_cursor(api: httpx.AsyncClient, cursor: str) -> None:
    response = await api.get(f"/v1/executions/{UNKNOWN}/events", params={"cursor": cursor})
    assert problem_fields(response, 422) == ["cursor"]


async def test_a_cursor_past_the_end_is_an_empty_last_page(api: httpx.AsyncClient, db: Database) -> None:
    execution_id = await spent_then_retried_then_cancelled(api, db)
    far = b64(b'{"event": 9223372036854775807}')
    response = await api.get(f"/v1/executions/{execution_id}/events", params={"cursor": far})
    assert response.json() == {"items": [], "next_cursor": None}


@pytest.mark.parametrize("limit", ["0", "501", "-1", "ten", "1.5"])
async def test_an_events_limit_outside_1_to_500_is_422(api: httpx.AsyncClient, limit: str) -> None:
    response = await api.get(f"/v1/executions/{UNKNOWN}/events", params={"limit": limit})
    assert problem_fields(response, 422) == ["limit"]
