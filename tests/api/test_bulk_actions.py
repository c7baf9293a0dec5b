"""Purge and bulk actions over HTTP against a real server and database: DELETE
/v1/executions/{id} (204, 409 while live, 404, 422), the idempotency key it frees, the bulk
routes' paths beside /v1/executions/{id}, every bulk action by each filter, the 422 without a
filter, `limit` and `more`, repeating, the dispatchers woken by a bulk retry, and bulk cancel and
retry racing a dispatcher that drains a backlog to a real handler."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from aiohttp import web

from app.db.database import Database
from app.domain.states import TRANSITIONS, JobState
from tests.api_contract import route_for
from tests.conftest import RunningServer, problem_fields, register, scalar, sql, wait_for_state, waits_for_a_lock

NOWHERE = "http://127.0.0.1:9/jobs"  # nothing listens on the discard port
FAR_FUTURE = "2999-01-01T00:00:00Z"  # keeps jobs ENQUEUED, never dispatched
ACTIONS = ("bulk-retry", "bulk-cancel", "bulk-delete")


@pytest.fixture
async def api(api_only_server: RunningServer, db: Database) -> AsyncIterator[httpx.AsyncClient]:
    """A client of the module's API-only server (no dispatcher: what a test stores stays as it
    is), on the emptied database. Tests that need a dispatcher start a node (`jobwire`)."""
    async with httpx.AsyncClient(base_url=api_only_server.url, timeout=30) as client:
        client.server = api_only_server  # type: ignore[attr-defined]
        yield client


@pytest.fixture
async def h(api: httpx.AsyncClient) -> AsyncIterator[str]:
    await register(api, "h", NOWHERE)
    await register(api, "other", NOWHERE)
    yield "h"


async def enqueue(api: httpx.AsyncClient, **fields: Any) -> dict[str, Any]:
    response = await api.post("/v1/jobs", json={"handler": "h", "run_at": FAR_FUTURE, **fields})
    assert response.status_code in (200, 201), response.text
    return response.json()


async def in_state(db: Database, api: httpx.AsyncClient, state: str, **fields: Any) -> str:
    """An execution moved to `state` as the runtime leaves it (a finished one has completed_at)."""
    execution_id = (await enqueue(api, **fields))["id"]
    await sql(db, "UPDATE job_executions SET state = :state, started_at = CASE WHEN :state = 'ENQUEUED' THEN NULL "
                  "ELSE now() END, completed_at = CASE WHEN :state IN ('ENQUEUED', 'PROCESSING') THEN NULL "
                  "ELSE now() END WHERE id = :id", state=state, id=uuid.UUID(execution_id))
    return execution_id


async def state_of(api: httpx.AsyncClient, execution_id: str) -> str | None:
    response = await api.get(f"/v1/executions/{execution_id}")
    return response.json()["state"] if response.status_code == 200 else None


def counts(matched: int, changed: int, *, skipped: int = 0, more: bool = False) -> dict[str, Any]:
    """A bulk action's answer."""
    return {"matched": matched, "changed": changed, "skipped": skipped, "more": more}


async def bulk(api: httpx.AsyncClient, action: str, **body: Any) -> dict[str, Any]:
    """A bulk action's answer, its `next_cursor` checked against `more` and left out."""
    return without_cursor(await bulk_with_cursor(api, action, **body))


async def bulk_with_cursor(api: httpx.AsyncClient, action: str, **body: Any) -> dict[str, Any]:
    response = await api.post(f"/v1/executions/{action}", json=body)
    assert response.status_code == 200, response.text
    answer = response.json()
    assert (answer["next_cursor"] is not None) == answer["more"], answer
    return answer


def without_cursor(answer: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in answer.items() if k != "next_cursor"}


# --- DELETE /v1/executions/{id} ----------------------------------------------------------------

async def test_delete_removes_a_finished_execution_with_its_logs_steps_and_events(api, h, db):
    for state in ("SUCCEEDED", "FAILED", "CANCELLED", "ABANDONED", "DEAD_LETTER"):
        execution_id = await in_state(db, api, state)
        key = uuid.UUID(execution_id)
        await sql(db, "INSERT INTO job_logs (execution_id, attempt, level, message) VALUES (:id, 0, 'INFO', 'x')",
                  id=key)
        await sql(db, "INSERT INTO job_steps (execution_id, name, result) VALUES (:id, 's', '1')", id=key)
        response = await api.delete(f"/v1/executions/{execution_id}")
        assert response.status_code == 204, response.text
        assert response.content == b""
        assert (await api.get(f"/v1/executions/{execution_id}")).status_code == 404
        assert (await api.get(f"/v1/executions/{execution_id}/logs")).status_code == 404
        for table in ("job_logs", "job_steps", "job_events"):
            assert await scalar(db, f"SELECT count(*) FROM {table} WHERE execution_id = :id", id=key) == 0, table


async def test_delete_of_a_live_execution_is_409_and_keeps_it(api, h, db):
    for state in ("ENQUEUED", "PROCESSING"):
        execution_id = await in_state(db, api, state)
        # An event of an earlier attempt (the insert and the claim write none: DESIGN §8).
        await scalar(db, "INSERT INTO job_events (execution_id, event) VALUES (:id, '{}') RETURNING id",
                     id=uuid.UUID(execution_id))
        response = await api.delete(f"/v1/executions/{execution_id}")
        problem_fields(response, 409)
        assert state in response.json()["detail"]
        assert await state_of(api, execution_id) == state
        assert await scalar(db, "SELECT count(*) FROM job_events WHERE execution_id = :id",
                            id=uuid.UUID(execution_id)) == 1


async def test_delete_of_an_unknown_execution_is_404_and_of_a_non_uuid_422(api):
    problem_fields(await api.delete(f"/v1/executions/{uuid.uuid4()}"), 404)
    assert problem_fields(await api.delete("/v1/executions/not-a-uuid"), 422) == ["execution_id"]


async def test_a_deleted_execution_frees_its_idempotency_key(api, h):
    first = await enqueue(api, idempotency_key="invoice-7")
    again = await api.post("/v1/jobs", json={"handler": "h", "run_at": FAR_FUTURE, "idempotency_key": "invoice-7"})
    assert again.status_code == 200 and again.json()["id"] == first["id"]
    assert (await api.post(f"/v1/executions/{first['id']}/cancel")).status_code == 200
    assert (await api.delete(f"/v1/executions/{first['id']}")).status_code == 204

    fresh = await api.post("/v1/jobs", json={"handler": "h", "run_at": FAR_FUTURE, "idempotency_key": "invoice-7"})
    assert fresh.status_code == 201, fresh.text
    assert fresh.json()["id"] != first["id"]


# --- the routes' paths -----------------------------------------------------------------------

async def test_the_bulk_paths_are_not_taken_for_execution_ids(api, h, db):
    """POST /v1/executions/bulk-… reaches the bulk routes (no execution id is parsed from it), and
    the routes of one execution still answer for an id, not for these words."""
    await in_state(db, api, "CANCELLED")
    for action in ACTIONS:
        response = await api.post(f"/v1/executions/{action}", json={"handler": "h"})
        assert response.status_code == 200, (action, response.text)
        assert set(response.json()) == {"matched", "changed", "skipped", "more", "next_cursor"}
    for action in ACTIONS:  # the same words as an id, on the routes of one execution: not UUIDs
        assert problem_fields(await api.get(f"/v1/executions/{action}"), 422) == ["execution_id"]
        assert problem_fields(await api.delete(f"/v1/executions/{action}"), 422) == ["execution_id"]
    response = await api.get("/v1/executions/bulk-cancel/logs")
    assert problem_fields(response, 422) == ["execution_id"]
    assert (await api.put("/v1/executions/bulk-cancel", json={"state": "ENQUEUED"})).status_code == 405
    for action in ACTIONS:  # as routing matches them: first match first
        route = route_for(api.server.app, "POST", f"/v1/executions/{action}")
        assert route is not None and route.original_route.name == action.replace("-", "_")


# --- validation ---------------------------------------------------------------------------------

@pytest.mark.parametrize("action", ACTIONS)
async def test_a_bulk_action_without_a_filter_is_422(api, action):
    for body in ({}, {"limit": 5}, {"state": None, "queue": None}):
        fields = problem_fields(await api.post(f"/v1/executions/{action}", json=body), 422)
        assert fields == ["body"], body
        assert "at least one of" in (await api.post(f"/v1/executions/{action}", json=body)).json()["detail"]


@pytest.mark.parametrize(("body", "field"), [
    ({"state": "ENQUEUED", "limit": 0}, "limit"),
    ({"state": "ENQUEUED", "limit": 10_001}, "limit"),
    ({"state": "ENQUEUED", "limit": "5"}, "limit"),
    ({"state": "ENQUEUED", "limit": 2.5}, "limit"),
    ({"state": "SLEEPING"}, "state"),
    ({"state": ["ENQUEUED", "CANCELLED"]}, "state"),
    ({"queue": "no spaces allowed"}, "queue"),
    ({"ids": ["not-a-uuid"]}, "ids[0]"),
    ({"ids": [str(uuid.UUID(int=i)) for i in range(10_001)]}, "ids"),
    ({"ids": "one"}, "ids"),
    ({"handler": "h", "colour": "red"}, "colour"),
])
async def test_bad_bulk_bodies_are_422_naming_the_field(api, body, field):
    assert field in problem_fields(await api.post("/v1/executions/bulk-cancel", json=body), 422)


@pytest.mark.parametrize(("action", "state"), [
    ("bulk-cancel", "SUCCEEDED"), ("bulk-cancel", "DEAD_LETTER"), ("bulk-retry", "ENQUEUED"),
    ("bulk-retry", "SUCCEEDED"), ("bulk-delete", "ENQUEUED"), ("bulk-delete", "PROCESSING"),
])
async def test_a_state_the_action_never_changes_is_422(api, action, state):
    response = await api.post(f"/v1/executions/{action}", json={"state": state})
    assert problem_fields(response, 422) == ["state"]
    assert "changes only" in response.json()["detail"]


async def test_the_bulk_routes_take_the_api_key(jobwire):
    server = await jobwire(api_keys="k1")
    async with httpx.AsyncClient(base_url=server.url, timeout=10) as client:
        for action in ACTIONS:
            problem_fields(await client.post(f"/v1/executions/{action}", json={"state": "CANCELLED"}), 401)
        problem_fields(await client.delete(f"/v1/executions/{uuid.uuid4()}"), 401)
        ok = await client.post("/v1/executions/bulk-cancel", json={"state": "ENQUEUED"},
                               headers={"authorization": "Bearer k1"})
        assert ok.status_code == 200 and ok.json() == {**counts(0, 0), "next_cursor": None}


# --- each action by each filter -----------------------------------------------------------------

FILTERS = ("state", "queue", "handler", "job_id", "ids")


async def two_groups(db: Database, api: httpx.AsyncClient, states: tuple[str, str]) -> tuple[list[str], list[str]]:
    """An execution in each of `states` matching every filter but `state` (queue q1, handler h,
    job_id j1), and one in each matching none of them (queue q2, handler other, job_id j2)."""
    picked, others = [], []
    for state in states:
        picked.append(await in_state(db, api, state, queue="q1", job_id="j1"))
        others.append(await in_state(db, api, state, queue="q2", job_id="j2", handler="other"))
    return picked, others


def chosen(name: str, picked: list[str], others: list[str], states: tuple[str, str]
           ) -> tuple[dict[str, Any], list[str], list[str]]:
    """The body filtering by `name`, the executions it selects, and those it leaves."""
    if name == "state":  # the first state, in every queue
        return {"state": states[0]}, [picked[0], others[0]], [picked[1], others[1]]
    body = {"queue": {"queue": "q1"}, "handler": {"handler": "h"}, "job_id": {"job_id": "j1"},
            "ids": {"ids": picked}}[name]
    return body, picked, others


async def run_by_filter(api: httpx.AsyncClient, db: Database, action: str, name: str, states: tuple[str, str],
                        finished_or_live: str) -> tuple[list[str], dict[str, str | None]]:
    """Runs `action` filtered by `name` over two_groups and an execution that matches the filters
    but is in a state the action never changes; returns the selected ones and how the rest were."""
    picked, others = await two_groups(db, api, states)
    bystander = await in_state(db, api, finished_or_live, queue="q1", job_id="j1")
    body, selected, left = chosen(name, picked, others, states)
    before = {e: await state_of(api, e) for e in [*left, bystander]}
    result = await bulk(api, action, **body)
    assert result == counts(len(selected), len(selected))
    assert {e: await state_of(api, e) for e in before} == before
    return selected, before


@pytest.mark.parametrize("name", FILTERS)
async def test_bulk_cancel_by_each_filter(api, h, db, name):
    selected, _ = await run_by_filter(api, db, "bulk-cancel", name, ("ENQUEUED", "PROCESSING"), "SUCCEEDED")
    for execution_id in selected:
        shown = (await api.get(f"/v1/executions/{execution_id}")).json()
        assert shown["state"] == "CANCELLED" and shown["completed_at"] is not None


@pytest.mark.parametrize("name", FILTERS)
async def test_bulk_retry_by_each_filter(api, h, db, name):
    selected, _ = await run_by_filter(api, db, "bulk-retry", name, ("DEAD_LETTER", "CANCELLED"), "SUCCEEDED")
    for execution_id in selected:
        shown = (await api.get(f"/v1/executions/{execution_id}")).json()
        assert (shown["state"], shown["attempt"], shown["completed_at"]) == ("ENQUEUED", 1, None)


@pytest.mark.parametrize("name", FILTERS)
async def test_bulk_delete_by_each_filter(api, h, db, name):
    selected, _ = await run_by_filter(api, db, "bulk-delete", name, ("SUCCEEDED", "DEAD_LETTER"), "ENQUEUED")
    for execution_id in selected:
        assert await state_of(api, execution_id) is None
        assert await scalar(db, "SELECT count(*) FROM job_events WHERE execution_id = :id",
                            id=uuid.UUID(execution_id)) == 0


async def test_filters_combine_and_ids_of_other_states_are_not_matched(api, h, db):
    a = await in_state(db, api, "CANCELLED", queue="q1")
    b = await in_state(db, api, "CANCELLED", queue="q2")
    c = await in_state(db, api, "SUCCEEDED", queue="q1")
    result = await bulk(api, "bulk-retry", queue="q1", ids=[a, b, c, a, str(uuid.uuid4())])
    assert result == counts(1, 1)
    assert [await state_of(api, e) for e in (a, b, c)] == ["ENQUEUED", "CANCELLED", "SUCCEEDED"]
    assert await bulk(api, "bulk-cancel", ids=[]) == counts(0, 0)


# --- limit, more, repeating ---------------------------------------------------------------------

async def test_limit_takes_the_oldest_first_and_more_says_when_to_send_again(api, h, db):
    ids = [(await enqueue(api, job_id=f"j{i}"))["id"] for i in range(7)]
    assert await bulk(api, "bulk-cancel", handler="h", limit=3) == counts(3, 3, more=True)
    assert [await state_of(api, e) for e in ids] == ["CANCELLED"] * 3 + ["ENQUEUED"] * 4
    assert await bulk(api, "bulk-cancel", handler="h", limit=3) == counts(3, 3, more=True)
    assert await bulk(api, "bulk-cancel", handler="h", limit=3) == counts(1, 1)
    assert await bulk(api, "bulk-cancel", handler="h", limit=3) == counts(0, 0)
    assert [await state_of(api, e) for e in ids] == ["CANCELLED"] * 7


async def test_exactly_limit_matching_rows_is_not_more(api, h, db):
    for _ in range(3):
        await enqueue(api)
    assert await bulk(api, "bulk-cancel", state="ENQUEUED", limit=3) == counts(3, 3)


async def test_the_default_limit_is_10000_and_batches_of_500_cover_them(api, h, db):
    """10,050 rows: the first call takes 10,000 (in batches of at most 500 rows each), the next
    the other 50."""
    await sql(db, "INSERT INTO job_executions (job_id, job_type, handler, queue, state, completed_at, created_at) "
                  "SELECT 'many', 'DELAYED', 'h', 'default', 'DEAD_LETTER', now(), "
                  "TIMESTAMPTZ '2026-01-01 00:00:00Z' - make_interval(secs => g) FROM generate_series(1, 10050) AS g")
    assert await bulk(api, "bulk-delete", job_id="many") == counts(10_000, 10_000, more=True)
    # The oldest went first: the 50 left are the newest (g = 1 … 50).
    ages = await scalar(db, "SELECT array_agg(CAST(EXTRACT(EPOCH FROM TIMESTAMPTZ '2026-01-01 00:00:00Z' - created_at) "
                            "AS int) ORDER BY created_at DESC) FROM job_executions WHERE job_id = 'many'")
    assert ages == list(range(1, 51))
    assert await bulk(api, "bulk-delete", job_id="many") == counts(50, 50)


@pytest.mark.parametrize("action", ACTIONS)
async def test_repeating_a_bulk_action_is_safe(api, h, db, action):
    state = {"bulk-retry": "DEAD_LETTER", "bulk-cancel": "ENQUEUED", "bulk-delete": "SUCCEEDED"}[action]
    ids = [await in_state(db, api, state) for _ in range(3)]
    first = await bulk(api, action, ids=ids)
    assert first == counts(3, 3)
    shown = [await state_of(api, e) for e in ids]
    assert await bulk(api, action, ids=ids) == counts(0, 0)
    assert [await state_of(api, e) for e in ids] == shown
    events = await scalar(db, "SELECT count(*) FROM job_events")
    await bulk(api, action, ids=ids)
    assert await scalar(db, "SELECT count(*) FROM job_events") == events  # no second transition


async def test_a_bulk_retry_does_not_select_executions_whose_handler_is_gone(api, h, db):
    kept = await in_state(db, api, "DEAD_LETTER")
    orphan = await in_state(db, api, "DEAD_LETTER", handler="other")
    assert (await api.delete("/v1/handlers/other")).status_code == 204
    assert await bulk(api, "bulk-retry", state="DEAD_LETTER") == counts(1, 1)
    assert [await state_of(api, e) for e in (kept, orphan)] == ["ENQUEUED", "DEAD_LETTER"]


async def test_repeating_a_bulk_retry_until_more_is_false_ends_past_rows_it_cannot_retry(api, h, db):
    """Three dead-lettered rows of a deleted handler, older than five retryable ones, limit 3:
    the calls reach the five and the repetition ends (the three were matched by every call, each
    changing none, and `more` stayed true)."""
    orphans = [await in_state(db, api, "DEAD_LETTER", handler="other") for _ in range(3)]
    retryable = [await in_state(db, api, "DEAD_LETTER") for _ in range(5)]
    assert (await api.delete("/v1/handlers/other")).status_code == 204
    answers = []
    for _ in range(10):
        answers.append(await bulk(api, "bulk-retry", state="DEAD_LETTER", limit=3))
        if not answers[-1]["more"]:
            break
    assert answers == [counts(3, 3, more=True), counts(2, 2)]
    assert [await state_of(api, e) for e in retryable] == ["ENQUEUED"] * 5
    assert [await state_of(api, e) for e in orphans] == ["DEAD_LETTER"] * 3


async def test_repeating_a_bulk_retry_with_its_cursor_ends_though_retried_rows_dead_letter_again(api, h, db):
    """Five dead-lettered rows, limit 2: after each call the rows it retried dead-letter again at
    once (as a handler that always fails would leave them). Sent with the cursor, the calls take
    each row once and the repetition ends; without it, they would take the same rows for ever."""
    dead = [await in_state(db, api, "DEAD_LETTER") for _ in range(5)]
    answers, cursor = [], None
    for _ in range(10):
        answer = await bulk_with_cursor(api, "bulk-retry", state="DEAD_LETTER", limit=2,
                                        **({} if cursor is None else {"cursor": cursor}))
        answers.append(without_cursor(answer))
        await sql(db, "UPDATE job_executions SET state = 'DEAD_LETTER', completed_at = now() "
                      "WHERE state = 'ENQUEUED'")  # each retried job failed again at once
        cursor = answer["next_cursor"]
        if cursor is None:
            break
    assert answers == [counts(2, 2, more=True), counts(2, 2, more=True), counts(1, 1)]
    attempts = [(await api.get(f"/v1/executions/{e}")).json()["attempt"] for e in dead]
    assert attempts == [1] * 5  # each retried once


async def test_repeating_a_bulk_cancel_with_its_cursor_does_not_chase_jobs_enqueued_meanwhile(api, h, db):
    first = [(await enqueue(api, queue="busy"))["id"] for _ in range(3)]
    answer = await bulk_with_cursor(api, "bulk-cancel", queue="busy", limit=2)
    assert without_cursor(answer) == counts(2, 2, more=True)
    later = [(await enqueue(api, queue="busy"))["id"] for _ in range(2)]  # clients keep enqueueing
    rest = await bulk_with_cursor(api, "bulk-cancel", queue="busy", limit=2, cursor=answer["next_cursor"])
    assert without_cursor(rest) == counts(1, 1)
    assert [await state_of(api, e) for e in first] == ["CANCELLED"] * 3
    assert [await state_of(api, e) for e in later] == ["ENQUEUED"] * 2


@pytest.mark.parametrize("cursor", ["x", "eyJhIjoxfQ", "WyIyMDI2LTEyLTAyVDAwOjAwOjAwKzAwOjAwIl0"])
async def test_a_cursor_the_api_did_not_issue_is_a_422_naming_it(api, h, db, cursor):
    response = await api.post("/v1/executions/bulk-cancel", json={"queue": "q", "cursor": cursor})
    assert problem_fields(response, 422) == ["cursor"]


async def test_a_row_whose_handler_is_deleted_after_the_selection_is_skipped(api, h, db):
    """The handler's delete commits while the retry waits for the handler's lock: the retry
    changes none of its rows and reports them as skipped; the next call does not select them."""
    gone = [await in_state(db, api, "DEAD_LETTER", handler="other") for _ in range(2)]
    kept = await in_state(db, api, "DEAD_LETTER")
    async with db.pool.acquire() as held:
        deleting = held.transaction()
        await deleting.start()
        await held.execute("DELETE FROM job_handlers WHERE name = 'other'")  # not committed yet
        retry = asyncio.create_task(bulk(api, "bulk-retry", state="DEAD_LETTER"))
        await waits_for_a_lock(db, held)
        await deleting.commit()
        assert await retry == counts(3, 1, skipped=2)
    assert [await state_of(api, e) for e in (*gone, kept)] == ["DEAD_LETTER", "DEAD_LETTER", "ENQUEUED"]
    assert await bulk(api, "bulk-retry", state="DEAD_LETTER") == counts(0, 0)



# --- with a running dispatcher -------------------------------------------------------------------

async def test_a_bulk_retry_wakes_the_dispatchers(jobwire, handler, db):
    """The retried executions are due at once: a node that polls only every 30 s claims them on
    the NOTIFY the retry's batch sends."""
    server = await jobwire(poll_interval=30)
    async with httpx.AsyncClient(base_url=server.url, timeout=10) as api:
        await register(api, "w", handler.route("/w", _ok))
        ids = []
        for _ in range(3):
            created = await api.post("/v1/jobs", json={"handler": "w", "run_at": FAR_FUTURE})
            ids.append(created.json()["id"])
        await sql(db, "UPDATE job_executions SET state = 'DEAD_LETTER', completed_at = now()")
        await asyncio.sleep(0.5)  # the node is asleep now, until a NOTIFY or 30 s pass
        started = time.monotonic()
        assert await bulk(api, "bulk-retry", handler="w") == counts(3, 3)
        for execution_id in ids:
            await wait_for_state(api, execution_id, "SUCCEEDED", timeout=15)
        assert time.monotonic() - started < 10
        assert sorted(job["execution_id"] for job in handler.received) == sorted(ids)


async def _ok(_request: web.Request, job: dict[str, Any]) -> web.StreamResponse:
    return web.json_response({"result": job["payload"]})


def _allowed(trail: list[str]) -> bool:
    steps = zip(trail, trail[1:], strict=False)
    return trail[0] == "ENQUEUED" and all(JobState(b) in TRANSITIONS[JobState(a)] for a, b in steps)


async def _trails(db: Database) -> dict[str, list[str]]:
    """Each execution's states, oldest first. The insert and the claim write no event row (DESIGN
    §8): every trail begins ENQUEUED, and a row that ends an attempt (it names the attempt's start)
    follows the PROCESSING its claim made."""
    rows = await sql(db, "SELECT execution_id, event->>'new_state', started_at IS NOT NULL FROM job_events ORDER BY id")
    trails: dict[str, list[str]] = {}
    for execution_id, new_state, ends_attempt in rows:
        trail = trails.setdefault(str(execution_id), ["ENQUEUED"])
        trail += ["PROCESSING", new_state] if ends_attempt else [new_state]
    return trails


async def test_bulk_cancel_and_retry_race_a_dispatcher_draining_a_backlog(jobwire, handler, db):
    """A node dispatches 800 executions to a real handler (8 in flight) while a bulk cancel of
    them all runs, then a bulk retry of what it cancelled. No request fails; every execution
    ends in a state §2 allows by transitions §2 allows; the cancel's `changed` is exactly what
    ended CANCELLED; none that the cancel caught waiting was ever dispatched, and none was
    dispatched twice for one attempt; the retry's executions all run to SUCCEEDED."""
    server = await jobwire(concurrency=8, poll_interval=0.2)

    async def slow(_request: web.Request, job: dict[str, Any]) -> web.StreamResponse:
        await asyncio.sleep(0.01)
        return web.json_response({"result": None})

    async with httpx.AsyncClient(base_url=server.url, timeout=60) as api:
        await register(api, "worker", handler.route("/slow", slow))
        ids: list[str] = []
        for _ in range(2):
            response = await api.post("/v1/jobs/batch", json={"jobs": [{"handler": "worker"}] * 400})
            assert response.status_code == 201, response.text
            ids += [item["id"] for item in response.json()["items"]]
        await handler.wait_for(40, timeout=30)

        cancel = await bulk(api, "bulk-cancel", handler="worker")
        cancel_returned = len(handler.received)
        assert 0 < cancel["changed"] <= cancel["matched"] and cancel["more"] is False
        assert cancel["skipped"] == cancel["matched"] - cancel["changed"]

        for _ in range(1200):
            live = await scalar(db, "SELECT count(*) FROM job_executions WHERE state IN ('ENQUEUED', 'PROCESSING')")
            if live == 0:
                break
            await asyncio.sleep(0.05)
        assert live == 0
        rows = await sql(db, "SELECT id, state, started_at FROM job_executions")
        states = {str(r[0]): r[1] for r in rows}
        assert set(states) == set(ids)
        assert set(states.values()) <= {"SUCCEEDED", "CANCELLED"}
        cancelled = {e for e, s in states.items() if s == "CANCELLED"}
        assert len(cancelled) == cancel["changed"]
        caught_waiting = {str(r[0]) for r in rows if r[1] == "CANCELLED" and r[2] is None}
        received = [job["execution_id"] for job in handler.received]
        assert len(received) == len(set(received))  # none dispatched twice
        assert not caught_waiting & set(received)  # none dispatched after its cancel committed
        assert len(received) - cancel_returned <= 8  # after the cancel: at most what was in flight
        trails = await _trails(db)
        assert all(_allowed(trails[e]) for e in ids), [trails[e] for e in ids if not _allowed(trails[e])][:3]
        assert all(trails[e][-1] == "CANCELLED" for e in cancelled)

        handler.received.clear()
        retry = await bulk(api, "bulk-retry", handler="worker", state="CANCELLED")
        assert retry == counts(len(cancelled), len(cancelled))
        for _ in range(1200):
            if await scalar(db, "SELECT count(*) FROM job_executions WHERE state = 'SUCCEEDED'") == len(ids):
                break
            await asyncio.sleep(0.05)
        assert await scalar(db, "SELECT count(*) FROM job_executions WHERE state = 'SUCCEEDED'") == len(ids)
        again = [(job["execution_id"], job["attempt"]) for job in handler.received]
        assert sorted(again) == sorted((e, 1) for e in cancelled)
        trails = await _trails(db)
        assert all(_allowed(trails[e]) for e in ids)


# --- dry run --------------------------------------------------------------------------------

async def dry_run(api: httpx.AsyncClient, action: str, **body: Any) -> dict[str, Any]:
    response = await api.post(f"/v1/executions/{action}", json={**body, "dry_run": True})
    assert response.status_code == 200, response.text
    return response.json()


async def snapshot(db: Database) -> list[Any]:
    """Every execution as stored (and how many events): what a dry run must leave as it is."""
    rows = await sql(db, "SELECT id, state, attempt, max_attempts, scheduled_at, completed_at, updated_at "
                         "FROM job_executions ORDER BY id")
    return [dict(r) for r in rows] + [await scalar(db, "SELECT count(*) FROM job_events")]


@pytest.mark.parametrize(("action", "states", "bystander"), [
    ("bulk-cancel", ("ENQUEUED", "PROCESSING"), "SUCCEEDED"),
    ("bulk-retry", ("DEAD_LETTER", "CANCELLED"), "SUCCEEDED"),
    ("bulk-delete", ("SUCCEEDED", "DEAD_LETTER"), "ENQUEUED"),
])
@pytest.mark.parametrize("name", FILTERS)
async def test_a_dry_run_changes_nothing_and_counts_what_the_call_then_changes(api, h, db, action, states, bystander,
                                                                              name):
    picked, others = await two_groups(db, api, states)
    await in_state(db, api, bystander, queue="q1", job_id="j1")
    body, selected, _ = chosen(name, picked, others, states)
    before = await snapshot(db)
    assert await dry_run(api, action, **body) == {"matched": len(selected), "more": False}
    assert await snapshot(db) == before
    assert await bulk(api, action, **body) == counts(len(selected), len(selected))


async def test_a_dry_run_counts_at_most_limit_and_says_more(api, h, db):
    ids = [(await enqueue(api, job_id=f"j{i}"))["id"] for i in range(5)]
    before = await snapshot(db)
    assert await dry_run(api, "bulk-cancel", handler="h", limit=3) == {"matched": 3, "more": True}
    assert await dry_run(api, "bulk-cancel", handler="h", limit=5) == {"matched": 5, "more": False}
    assert await dry_run(api, "bulk-cancel", handler="h") == {"matched": 5, "more": False}  # the default limit
    assert await snapshot(db) == before
    # With a call's cursor: what the next call of the repetition would take.
    first = await bulk_with_cursor(api, "bulk-cancel", handler="h", limit=3)
    assert without_cursor(first) == counts(3, 3, more=True)
    assert await dry_run(api, "bulk-cancel", handler="h", limit=3, cursor=first["next_cursor"]) == {
        "matched": 2, "more": False}
    assert await bulk(api, "bulk-cancel", handler="h", limit=3, cursor=first["next_cursor"]) == counts(2, 2)
    assert [await state_of(api, e) for e in ids] == ["CANCELLED"] * 5
    assert await dry_run(api, "bulk-cancel", handler="h") == {"matched": 0, "more": False}


async def test_a_dry_run_of_a_retry_leaves_out_rows_of_a_deleted_handler(api, h, db):
    await in_state(db, api, "DEAD_LETTER", handler="other")
    await in_state(db, api, "DEAD_LETTER")
    assert await dry_run(api, "bulk-retry", state="DEAD_LETTER") == {"matched": 2, "more": False}
    assert (await api.delete("/v1/handlers/other")).status_code == 204
    assert await dry_run(api, "bulk-retry", state="DEAD_LETTER") == {"matched": 1, "more": False}
    assert await bulk(api, "bulk-retry", state="DEAD_LETTER") == counts(1, 1)


@pytest.mark.parametrize(("body", "field"), [
    ({"state": "ENQUEUED", "dry_run": "yes"}, "dry_run"),
    ({"state": "ENQUEUED", "dry_run": 1}, "dry_run"),
    ({"state": "SUCCEEDED", "dry_run": True}, "state"),  # refused as the call is
    ({"dry_run": True}, "body"),
])
async def test_a_bad_dry_run_is_422_as_the_call_would_be(api, body, field):
    assert problem_fields(await api.post("/v1/executions/bulk-cancel", json=body), 422) == [field]


async def test_dry_run_false_is_the_call(api, h, db):
    await enqueue(api)
    assert await bulk(api, "bulk-cancel", state="ENQUEUED", dry_run=False) == counts(1, 1)
