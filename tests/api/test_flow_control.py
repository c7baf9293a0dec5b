"""Flow control through the API: a handler's key_concurrency, rate_limit and key_rate_limit; a job's
concurrency_key (in the idempotency fingerprint only when set); GET /v1/handlers/{name}/keys and
pausing and resuming one key. The claim's own rules are proven in tests/db/test_flow_claim.py and
with real nodes in tests/cluster/test_flow_control.py."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.api.conftest import NOWHERE
from tests.conftest import problem_fields, register, sql

async def enqueue(h_api: httpx.AsyncClient, **fields: Any) -> dict[str, Any]:
    response = await h_api.post("/v1/jobs", json={"handler": "h", **fields})
    assert response.status_code in (200, 201), response.text
    return response.json()


async def test_a_handler_keeps_its_flow_limits_and_shows_them(h_api):
    body = await register(h_api, "h", NOWHERE, key_concurrency=2, rate_limit={"limit": 20, "period_seconds": 1},
                          key_rate_limit={"limit": 5, "period_seconds": 60})
    assert (body["key_concurrency"], body["rate_limit"], body["key_rate_limit"]) == (
        2, {"limit": 20, "period_seconds": 1.0}, {"limit": 5, "period_seconds": 60.0})
    assert (await h_api.get("/v1/handlers/h")).json()["rate_limit"] == {"limit": 20, "period_seconds": 1.0}
    body = await register(h_api, "h", NOWHERE)  # PUT replaces: limits left out are gone
    assert (body["key_concurrency"], body["rate_limit"], body["key_rate_limit"]) == (None, None, None)


@pytest.mark.parametrize("field, value, where", [
    ("key_concurrency", 0, "key_concurrency"),
    ("key_concurrency", "2", "key_concurrency"),
    ("rate_limit", {"limit": 0, "period_seconds": 1}, "rate_limit.limit"),
    ("rate_limit", {"limit": 5, "period_seconds": 0}, "rate_limit.period_seconds"),
    ("rate_limit", {"limit": 5, "period_seconds": 86401}, "rate_limit.period_seconds"),
    ("rate_limit", {"limit": 5}, "rate_limit.period_seconds"),
    ("key_rate_limit", {"limit": 5, "period_seconds": 1, "burst": 3}, "key_rate_limit.burst"),
])
async def test_bad_flow_limits_are_refused_naming_the_field(h_api, field, value, where):
    response = await h_api.put("/v1/handlers/h", json={"url": NOWHERE, field: value})
    assert problem_fields(response, 422) == [where]


async def test_a_stateful_handler_takes_no_key_limits(h_api):
    response = await h_api.put("/v1/handlers/s", json={"url": NOWHERE, "stateful": True, "key_concurrency": 1,
                                                      "key_rate_limit": {"limit": 1, "period_seconds": 1}})
    assert problem_fields(response, 422) == ["key_concurrency", "key_rate_limit"]


async def test_a_job_carries_its_concurrency_key(h_api):
    job = await enqueue(h_api, concurrency_key="customer:42")
    assert job["concurrency_key"] == "customer:42"
    assert (await h_api.get(f"/v1/executions/{job['id']}")).json()["concurrency_key"] == "customer:42"
    assert (await enqueue(h_api))["concurrency_key"] is None


@pytest.mark.parametrize("value", ["", "has space", "x" * 256, 42, "-leading"])
async def test_a_bad_concurrency_key_is_refused_naming_it(h_api, value):
    assert problem_fields(await h_api.post("/v1/jobs", json={"handler": "h", "concurrency_key": value}),
                          422) == ["concurrency_key"]
    batch = await h_api.post("/v1/jobs/batch",
                           json={"jobs": [{"handler": "h"}, {"handler": "h", "concurrency_key": value}]})
    assert problem_fields(batch, 422) == ["jobs[1].concurrency_key"]


async def test_a_stateful_job_with_a_key_is_refused(h_api):
    response = await h_api.post("/v1/jobs", json={"handler": "h", "stateful": True, "concurrency_key": "a"})
    assert problem_fields(response, 422) == ["concurrency_key"]
    await register(h_api, "s", NOWHERE, stateful=True)
    response = await h_api.post("/v1/jobs", json={"handler": "s", "concurrency_key": "a"})
    assert problem_fields(response, 422) == ["concurrency_key"]


async def test_the_concurrency_key_is_part_of_an_idempotent_request_only_when_set(h_api):
    first = await enqueue(h_api, idempotency_key="k1", payload=1)
    again = await h_api.post("/v1/jobs", json={"handler": "h", "idempotency_key": "k1", "payload": 1})
    assert again.status_code == 200 and again.json()["id"] == first["id"]
    other = await h_api.post("/v1/jobs", json={"handler": "h", "idempotency_key": "k1", "payload": 1,
                                             "concurrency_key": "a"})
    assert problem_fields(other, 422) == ["idempotency_key"]
    keyed = await enqueue(h_api, idempotency_key="k2", concurrency_key="a")
    again = await h_api.post("/v1/jobs", json={"handler": "h", "idempotency_key": "k2", "concurrency_key": "a"})
    assert again.status_code == 200 and again.json()["id"] == keyed["id"]


async def keys(h_api: httpx.AsyncClient, **params: Any) -> dict[str, Any]:
    response = await h_api.get("/v1/handlers/h/keys", params=params)
    assert response.status_code == 200, response.text
    return response.json()


async def test_keys_are_listed_with_their_waiting_and_in_flight_jobs_in_pages(h_api, db):
    await register(h_api, "h", NOWHERE, key_concurrency=1)
    for key, n in (("a", 3), ("b", 1), ("c", 2)):
        for _ in range(n):
            await enqueue(h_api, concurrency_key=key)
    await enqueue(h_api)  # no key: not listed
    await sql(db, "UPDATE job_executions SET state = 'PROCESSING', started_at = now(), locked_by = 'n', "
                  "deadline_at = now() + interval '1 hour' "
                  "WHERE id = (SELECT id FROM job_executions WHERE concurrency_key = 'a' LIMIT 1)")
    page = await keys(h_api, limit=2)
    assert [(k["key"], k["waiting"], k["in_flight"], k["paused"]) for k in page["items"]] == [
        ("a", 2, 1, False), ("b", 1, 0, False)]
    assert page["items"][0]["rate"] == {"count": 0, "window_start": None, "next_slot": None}
    rest = await keys(h_api, limit=2, cursor=page["next_cursor"])
    assert [k["key"] for k in rest["items"]] == ["c"] and rest["next_cursor"] is None
    assert [k["key"] for k in (await keys(h_api, state="throttled"))["items"]] == ["a"]  # at key_concurrency
    assert [k["key"] for k in (await keys(h_api, state="waiting"))["items"]] == ["a", "b", "c"]


async def test_pausing_a_key_lists_it_paused_and_resuming_wakes_the_claim(h_api):
    await enqueue(h_api, concurrency_key="acme")
    paused = await h_api.post("/v1/handlers/h/keys/acme/pause")
    assert paused.status_code == 200 and paused.json()["paused"] is True and paused.json()["waiting"] == 1
    # A key with no jobs yet can be paused too: keys need no registration.
    assert (await h_api.post("/v1/handlers/h/keys/later/pause")).json() == {
        "key": "later", "waiting": 0, "in_flight": 0, "rate": {"count": 0, "window_start": None, "next_slot": None},
        "paused": True, "retry_after": None}
    assert [k["key"] for k in (await keys(h_api, state="paused"))["items"]] == ["acme", "later"]
    assert [k["key"] for k in (await keys(h_api))["items"]] == ["acme", "later"]
    resumed = await h_api.post("/v1/handlers/h/keys/acme/resume")
    assert resumed.json()["paused"] is False
    assert [k["key"] for k in (await keys(h_api, state="paused"))["items"]] == ["later"]


async def test_keys_of_an_unknown_handler_are_a_404_and_bad_parameters_a_422(h_api):
    problem_fields(await h_api.get("/v1/handlers/nope/keys"), 404)
    problem_fields(await h_api.post("/v1/handlers/nope/keys/a/pause"), 404)
    assert problem_fields(await h_api.get("/v1/handlers/h/keys", params={"state": "sleeping"}), 422) == ["state"]
    assert problem_fields(await h_api.get("/v1/handlers/h/keys", params={"cursor": "!!"}), 422) == ["cursor"]
    assert problem_fields(await h_api.post("/v1/handlers/h/keys/bad key/pause"), 422) == ["key"]


async def test_a_handler_shows_its_circuit_and_its_adaptive_limit(h_api, db):
    body = await register(h_api, "h", NOWHERE)
    assert body["circuit"] == {"state": "closed", "until": None, "failures": 0} and body["adaptive"] is None
    body = await register(h_api, "h", NOWHERE, max_concurrency=10, adaptive=True)
    assert body["adaptive"] == {"limit": 4, "since": None}  # not started: its first claim's limit
    await sql(db, "INSERT INTO job_handler_flow (handler, circuit_state, circuit_until, circuit_failures, "
                  "adaptive_limit, adaptive_since) VALUES ('h', 'open', now() + interval '1 minute', 5, 2, now())")
    body = (await h_api.get("/v1/handlers/h")).json()
    assert body["circuit"]["state"] == "open" and body["circuit"]["failures"] == 5 and body["circuit"]["until"]
    assert body["adaptive"]["limit"] == 2 and body["adaptive"]["since"]
    metrics = (await h_api.get("/metrics")).text
    assert 'jobwire_handler_circuit{handler="h",state="open"} 1.0' in metrics
    assert 'jobwire_handler_circuit{handler="h",state="closed"} 0.0' in metrics
    assert 'jobwire_handler_circuit_failures{handler="h"} 5.0' in metrics
    assert 'jobwire_handler_adaptive_limit{handler="h"} 2.0' in metrics


async def test_adaptive_needs_max_concurrency(h_api):
    response = await h_api.put("/v1/handlers/h", json={"url": NOWHERE, "adaptive": True})
    assert problem_fields(response, 422) == ["adaptive"]
