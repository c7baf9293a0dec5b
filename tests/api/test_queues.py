"""Queues: GET /v1/queues, POST /v1/queues/{name}/pause | resume (DESIGN §4, §6.4).

A paused queue still accepts jobs but no node claims from it; resume wakes the dispatchers at
once. The overview counts the live states and the dead letters (ENQUEUED due and scheduled,
PROCESSING, DEAD_LETTER, 0 included) through their indexes, never the finished history, and gives
the age of the oldest due ENQUEUED job.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from aiohttp import web

from app.db.database import Database
from app.domain.states import JobState
from app.db.statements import execute
from tests.conftest import (
    HandlerServer,
    RunningServer,
    problem_fields,
    register,
    settings_for,
    start_server,
    wait_for_state,
)

PROBLEM = "application/problem+json"
COUNTED = ["ENQUEUED", "PROCESSING", "DEAD_LETTER"]
ZERO = dict.fromkeys(COUNTED, 0)
FAR_FUTURE = "2999-01-01T00:00:00Z"


@pytest.fixture
async def view(api_only_server: RunningServer, db: Database) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=api_only_server.url, timeout=10) as client:
        yield client


async def insert(db: Database, queue: str, state: str, *, age: float = 0.0, n: int = 1, stateful: bool = False) -> None:
    """n rows of a queue in a state, scheduled `age` seconds ago (negative: in the future)."""
    async with db.transaction() as conn:
        await execute(conn, """
            INSERT INTO job_executions (job_id, job_type, handler, queue, state, stateful, scheduled_at)
            SELECT 'j-' || g, 'DELAYED', 'h', :queue, :state, :stateful, now() - make_interval(secs => :age)
            FROM generate_series(1, :n) AS g""", queue=queue, state=state, age=age, n=n, stateful=stateful)


def by_name(listing: httpx.Response) -> dict[str, dict[str, Any]]:
    assert listing.status_code == 200, listing.text
    return {q["name"]: q for q in listing.json()["items"]}


# --- pause / resume answers ----------------------------------------------------------------

async def test_pause_and_resume_answer_200_with_the_queue(view: httpx.AsyncClient, db: Database) -> None:
    await insert(db, "mail", "ENQUEUED", age=5, n=2)
    await insert(db, "mail", "SUCCEEDED", n=3)

    paused = await view.post("/v1/queues/mail/pause")
    assert paused.status_code == 200, paused.text
    assert paused.headers["content-type"].startswith("application/json")
    body = paused.json()
    assert set(body) == {"name", "paused", "counts", "oldest_claimable_age_seconds"}
    assert (body["name"], body["paused"]) == ("mail", True)
    assert body["counts"] == {**ZERO, "ENQUEUED": 2}  # the 3 SUCCEEDED are history, not counted
    assert body["oldest_claimable_age_seconds"] >= 5

    assert (await view.post("/v1/queues/mail/pause")).json()["paused"] is True  # idempotent
    resumed = await view.post("/v1/queues/mail/resume")
    assert resumed.status_code == 200
    assert resumed.json() == {**body, "paused": False,
                              "oldest_claimable_age_seconds": resumed.json()["oldest_claimable_age_seconds"]}
    assert (await view.post("/v1/queues/mail/resume")).json()["paused"] is False


async def test_a_queue_without_executions_can_be_paused_and_is_listed(view: httpx.AsyncClient) -> None:
    assert (await view.get("/v1/queues")).json() == {"items": []}
    body = (await view.post("/v1/queues/not-yet-used/pause")).json()
    assert body == {"name": "not-yet-used", "paused": True, "counts": ZERO, "oldest_claimable_age_seconds": None}
    assert (await view.get("/v1/queues")).json() == {"items": [body]}
    resumed = (await view.post("/v1/queues/not-yet-used/resume")).json()
    assert resumed == {**body, "paused": False}
    assert (await view.get("/v1/queues")).json() == {"items": [resumed]}


@pytest.mark.parametrize("name", ["-leading-dash", "a" * 256, "sp ace", "ünïcode", "semi;colon"])
@pytest.mark.parametrize("action", ["pause", "resume"])
async def test_an_invalid_queue_name_is_422(view: httpx.AsyncClient, name: str, action: str) -> None:
    response = await view.post(f"/v1/queues/{name}/{action}")
    assert problem_fields(response, 422) == ["name"]
    assert (await view.get("/v1/queues")).json() == {"items": []}


async def test_other_methods_are_405_and_unknown_actions_404(view: httpx.AsyncClient) -> None:
    assert (await view.get("/v1/queues/q/pause")).status_code == 405
    assert (await view.post("/v1/queues/q/stop")).status_code == 404
    assert (await view.post("/v1/queues")).status_code == 405


# --- the overview ---------------------------------------------------------------------------

async def test_queues_count_the_live_states_and_the_dead_letters_never_the_history(
        view: httpx.AsyncClient, db: Database) -> None:
    for i, state in enumerate(s.value for s in JobState):
        await insert(db, "busy", state, n=i + 1, age=-3600 if state == "ENQUEUED" else 0)
    await insert(db, "history-only", "SUCCEEDED", n=2)  # finished rows alone: not a queue to list
    await insert(db, "zz-last", "DEAD_LETTER")

    listing = (await view.get("/v1/queues")).json()["items"]
    assert [q["name"] for q in listing] == ["busy", "zz-last"]
    queues = {q["name"]: q for q in listing}
    assert queues["busy"]["counts"] == {"ENQUEUED": 1, "PROCESSING": 2, "DEAD_LETTER": 7}
    assert list(queues["busy"]["counts"]) == COUNTED
    assert queues["zz-last"]["counts"] == {**ZERO, "DEAD_LETTER": 1}
    assert all(q["paused"] is False for q in listing)
    # Nothing due: the only ENQUEUED jobs of "busy" are future-dated.
    assert all(q["oldest_claimable_age_seconds"] is None for q in listing)


async def test_oldest_claimable_age_is_the_oldest_due_enqueued_job(view: httpx.AsyncClient, db: Database) -> None:
    await insert(db, "q", "ENQUEUED", age=-600)  # not due
    await insert(db, "q", "PROCESSING", age=900)  # not ENQUEUED
    await insert(db, "q", "DEAD_LETTER", age=900)
    assert by_name(await view.get("/v1/queues"))["q"]["oldest_claimable_age_seconds"] is None

    await insert(db, "q", "ENQUEUED", age=60)
    await insert(db, "q", "ENQUEUED", age=30, stateful=True)
    age = by_name(await view.get("/v1/queues"))["q"]["oldest_claimable_age_seconds"]
    assert 60 <= age < 70


async def test_the_age_of_a_due_job_on_a_paused_queue_grows(jobwire, handler: HandlerServer) -> None:
    server = await jobwire()
    async with httpx.AsyncClient(base_url=server.url, timeout=10) as api:
        await register(api, "h", handler.url + "/h")
        assert (await api.post("/v1/queues/held/pause")).status_code == 200
        job = (await api.post("/v1/jobs", json={"handler": "h", "queue": "held"})).json()
        first = by_name(await api.get("/v1/queues"))["held"]
        await asyncio.sleep(0.6)
        later = by_name(await api.get("/v1/queues"))["held"]
        assert first["paused"] is True and first["counts"]["ENQUEUED"] == 1
        assert 0 <= first["oldest_claimable_age_seconds"] < later["oldest_claimable_age_seconds"]
        assert later["oldest_claimable_age_seconds"] - first["oldest_claimable_age_seconds"] >= 0.5
        assert (await api.get(f"/v1/executions/{job['id']}")).json()["state"] == "ENQUEUED"
    assert handler.received == []


# --- pause holds dispatch back; resume releases it at once ----------------------------------

async def test_a_paused_queue_accepts_jobs_but_dispatches_none_until_resumed(jobwire, handler: HandlerServer) -> None:
    server = await jobwire(poll_interval=30.0)  # only resume's NOTIFY can wake the dispatcher in time
    async with httpx.AsyncClient(base_url=server.url, timeout=10) as api:
        await register(api, "h", handler.url + "/h")
        assert (await api.post("/v1/queues/held/pause")).json()["paused"] is True
        one = await api.post("/v1/jobs", json={"handler": "h", "queue": "held", "payload": 1})
        assert one.status_code == 201 and one.json()["state"] == "ENQUEUED"
        batch = await api.post("/v1/jobs/batch", json={"jobs": [
            {"handler": "h", "queue": "held", "payload": 2, "stateful": True},
            {"handler": "h", "queue": "open", "payload": 3}]})
        assert batch.status_code == 201
        held = [one.json()["id"], batch.json()["items"][0]["id"]]
        await wait_for_state(api, batch.json()["items"][1]["id"], "SUCCEEDED")  # other queues run
        await asyncio.sleep(0.5)
        assert [j["payload"] for j in handler.received] == [3]
        assert [(await api.get(f"/v1/executions/{i}")).json()["state"] for i in held] == ["ENQUEUED"] * 2

        resumed = time.monotonic()
        assert (await api.post("/v1/queues/held/resume")).json()["paused"] is False
        await handler.wait_for(3, timeout=2.0)
        assert time.monotonic() - resumed < 2.0
        for execution_id in held:
            await wait_for_state(api, execution_id, "SUCCEEDED")
        # Done, so no longer counted; the queue stays listed (its job_queues row).
        assert by_name(await api.get("/v1/queues"))["held"]["counts"] == ZERO


async def test_pausing_lets_a_running_call_finish(jobwire, handler: HandlerServer) -> None:
    release = asyncio.Event()

    async def slow(_: web.Request, job: dict[str, Any]) -> web.StreamResponse:
        await asyncio.wait_for(release.wait(), 10)
        return web.json_response({"result": job["payload"]})

    server = await jobwire()
    async with httpx.AsyncClient(base_url=server.url, timeout=10) as api:
        await register(api, "slow", handler.route("/slow", slow))
        running = (await api.post("/v1/jobs", json={"handler": "slow", "queue": "q", "payload": 1})).json()
        await handler.wait_for(1)
        paused = (await api.post("/v1/queues/q/pause")).json()
        assert paused["counts"]["PROCESSING"] == 1
        waiting = (await api.post("/v1/jobs", json={"handler": "slow", "queue": "q", "payload": 2})).json()
        release.set()
        await wait_for_state(api, running["id"], "SUCCEEDED")
        await asyncio.sleep(0.5)  # several polls
        assert (await api.get(f"/v1/executions/{waiting['id']}")).json()["state"] == "ENQUEUED"
        assert len(handler.received) == 1


# --- API keys ------------------------------------------------------------------------------

@pytest.fixture(scope="module")
async def keyed_server(database_url: str) -> AsyncIterator[RunningServer]:
    server = await start_server(settings_for(database_url, api_keys=["k1"]), background=False)
    yield server
    await server.stop()


@pytest.mark.parametrize(("method", "path"), [
    ("GET", "/v1/queues"), ("POST", "/v1/queues/q/pause"), ("POST", "/v1/queues/q/resume")])
async def test_queue_routes_take_the_api_key(keyed_server: RunningServer, db: Database, method: str,
                                             path: str) -> None:
    async with httpx.AsyncClient(base_url=keyed_server.url, timeout=10) as client:
        for headers in ({}, {"authorization": "Bearer wrong"}, {"authorization": "k1"}):
            response = await client.request(method, path, headers=headers)
            assert response.status_code == 401, response.text
            assert response.headers["content-type"] == PROBLEM
            assert response.headers["www-authenticate"] == "Bearer"
        assert (await client.get("/v1/queues", headers={"authorization": "Bearer k1"})).json() == {"items": []}
        response = await client.request(method, path, headers={"authorization": "Bearer k1"})
        assert response.status_code == 200, response.text
