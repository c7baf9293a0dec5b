"""Debounce at enqueue (POST /v1/jobs `debounce`): trailing mode pushes the waiting execution and
takes the latest payload, never past max_delay_seconds; leading mode runs the first and drops the
rest within the window; an idempotency key answers first; a batch refuses it; enqueues racing on
two servers (their own connection pools) leave one execution."""

from __future__ import annotations

import asyncio
from datetime import datetime
from typing import Any

import httpx
import pytest

from tests.api.conftest import NOWHERE
from tests.conftest import problem_fields, register, sql

async def enqueue(h_api: httpx.AsyncClient, status: int | None = None, **fields: Any) -> dict[str, Any]:
    response = await h_api.post("/v1/jobs", json={"handler": "h", **fields})
    assert response.status_code == (status or response.status_code) and response.status_code in (200, 201), \
        response.text
    return response.json()


def seconds(a: str, b: str) -> float:
    return (datetime.fromisoformat(b) - datetime.fromisoformat(a)).total_seconds()


async def test_trailing_pushes_the_waiting_execution_and_takes_the_latest_payload(h_api, db):
    first = await enqueue(h_api, 201, payload={"v": 1}, metadata={"m": 1},
                          debounce={"key": "reindex:42", "delay_seconds": 60})
    assert first["debounced"] is False and first["state"] == "ENQUEUED"
    assert 59 <= seconds(first["created_at"], first["scheduled_at"]) <= 61
    await asyncio.sleep(0.2)
    second = await enqueue(h_api, 200, payload={"v": 2}, metadata={"m": 2},
                           debounce={"key": "reindex:42", "delay_seconds": 60})
    assert second["debounced"] is True and second["id"] == first["id"]
    assert (second["payload"], second["metadata"]) == ({"v": 2}, {"m": 2})
    assert second["scheduled_at"] > first["scheduled_at"]  # pushed
    other = await enqueue(h_api, 201, debounce={"key": "reindex:43", "delay_seconds": 60})
    assert other["id"] != first["id"]
    assert await sql(db, "SELECT count(*) FROM job_executions") == [(2,)]


async def test_trailing_never_pushes_past_max_delay_seconds_from_the_first_enqueue(h_api):
    debounce = {"key": "k", "delay_seconds": 60, "max_delay_seconds": 90}
    first = await enqueue(h_api, debounce=debounce)
    await asyncio.sleep(0.1)
    await enqueue(h_api, debounce={**debounce, "delay_seconds": 80})
    last = await enqueue(h_api, debounce={**debounce, "delay_seconds": 89})
    cap = seconds(first["created_at"], last["scheduled_at"])
    assert 89 < cap <= 90.05, cap


async def test_once_it_runs_the_next_enqueue_makes_a_new_execution(h_api, db):
    first = await enqueue(h_api, debounce={"key": "k", "delay_seconds": 60})
    await sql(db, "UPDATE job_executions SET state = 'PROCESSING', started_at = now(), locked_by = 'n', "
                  "deadline_at = now() + interval '1 hour' WHERE id = CAST(:id AS uuid)", id=first["id"])
    second = await enqueue(h_api, 201, debounce={"key": "k", "delay_seconds": 60})
    assert second["id"] != first["id"] and second["debounced"] is False


async def test_leading_runs_the_first_at_once_and_drops_the_rest_within_the_window(h_api, db):
    debounce = {"key": "notify", "delay_seconds": 60, "mode": "leading"}
    first = await enqueue(h_api, 201, payload=1, debounce=debounce)
    assert first["scheduled_at"] == first["created_at"]  # due at once
    dropped = await enqueue(h_api, 200, payload=2, debounce=debounce)
    assert dropped["debounced"] is True and dropped["id"] == first["id"] and dropped["payload"] == 1
    await sql(db, "UPDATE job_debounce SET until = now() - interval '1 ms'")  # the window passed
    later = await enqueue(h_api, 201, payload=3, debounce=debounce)
    assert later["id"] != first["id"] and later["payload"] == 3


async def test_an_idempotency_key_is_checked_first(h_api, db):
    first = await enqueue(h_api, 201, idempotency_key="once", debounce={"key": "k", "delay_seconds": 60})
    again = await enqueue(h_api, 200, idempotency_key="once", debounce={"key": "k", "delay_seconds": 60})
    assert again["id"] == first["id"] and again["debounced"] is False
    other = await h_api.post("/v1/jobs", json={"handler": "h", "idempotency_key": "once", "payload": "changed",
                                             "debounce": {"key": "k", "delay_seconds": 60}})
    assert problem_fields(other, 422) == ["idempotency_key"]


@pytest.mark.parametrize("debounce, where", [
    ({"key": "k"}, "debounce.delay_seconds"),
    ({"key": "bad key", "delay_seconds": 1}, "debounce.key"),
    ({"key": "k", "delay_seconds": 0}, "debounce.delay_seconds"),
    ({"key": "k", "delay_seconds": 86401}, "debounce.delay_seconds"),
    ({"key": "k", "delay_seconds": 10, "max_delay_seconds": 5}, "debounce.max_delay_seconds"),
    ({"key": "k", "delay_seconds": 10, "mode": "sideways"}, "debounce.mode"),
])
async def test_a_bad_debounce_is_refused_naming_the_field(h_api, debounce, where):
    assert problem_fields(await h_api.post("/v1/jobs", json={"handler": "h", "debounce": debounce}), 422) == [where]


async def test_debounce_decides_the_start_and_is_for_one_job_only(h_api):
    response = await h_api.post("/v1/jobs", json={"handler": "h", "delay_seconds": 5,
                                                "debounce": {"key": "k", "delay_seconds": 1}})
    assert problem_fields(response, 422) == ["debounce"]
    batch = await h_api.post("/v1/jobs/batch", json={"jobs": [{"handler": "h"},
                                                            {"handler": "h", "debounce": {"key": "k",
                                                                                          "delay_seconds": 1}}]})
    assert problem_fields(batch, 422) == ["jobs[1].debounce"]
    unknown = await h_api.post("/v1/jobs", json={"handler": "nope", "debounce": {"key": "k", "delay_seconds": 1}})
    assert problem_fields(unknown, 422) == ["handler"]


@pytest.mark.parametrize("mode", ["trailing", "leading"])
async def test_enqueues_racing_on_two_servers_leave_one_execution(api_only_server, jobwire, db, mode):
    async with httpx.AsyncClient(base_url=api_only_server.url, timeout=30) as one:
        await register(one, "h", NOWHERE)
        second = await jobwire(concurrency=1, queues="nothing-here")  # its dispatcher claims nothing
        async with httpx.AsyncClient(base_url=second.url, timeout=30) as two:
            body = {"handler": "h", "debounce": {"key": "race", "delay_seconds": 60, "mode": mode}}
            answers = await asyncio.gather(*(client.post("/v1/jobs", json={**body, "payload": i})
                                             for i in range(20) for client in (one, two)))
    assert {a.status_code for a in answers} <= {200, 201}
    assert sorted(a.status_code for a in answers).count(201) == 1
    assert len({a.json()["id"] for a in answers}) == 1
    assert await sql(db, "SELECT count(*) FROM job_executions") == [(1,)]
