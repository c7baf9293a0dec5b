"""Logs and run-step-once callbacks against a live server and real handlers (DESIGN §5): log
messages stored exactly as normalized, with the attempt that wrote them, paged oldest first;
a step recorded on one attempt replayed on the next without running again; the callback token
rules (401, 403, 409 for a stale attempt) and API keys kept to the management routes."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import datetime
from typing import Any
from uuid import UUID

import httpx
import pytest
from aiohttp import web

from app.db.database import Database
from app.db.statements import fetch
from tests.conftest import HandlerServer, RunningServer, register, wait_for_state

TRUNCATED = "…[truncated {} chars]"


async def accept(_: web.Request, __: dict[str, Any]) -> web.StreamResponse:
    return web.Response(status=202)


def bearer(token: str) -> dict[str, str]:
    return {"authorization": f"Bearer {token}"}


async def accepted(api: httpx.AsyncClient, handler: HandlerServer, n: int = 1, **job: Any) -> dict[str, Any]:
    """Enqueue a job for a handler that accepts (202); returns the request its handler received."""
    await register(api, "later", handler.route("/later", accept))
    response = await api.post("/v1/jobs", json={"handler": "later", **job})
    assert response.status_code == 201, response.text
    await handler.wait_for(n)
    return handler.received[n - 1]


async def post_logs(api: httpx.AsyncClient, job: dict[str, Any], entries: Any,
                    token: str | None = "") -> httpx.Response:
    """token "" → the job's own callback token; None → no Authorization header."""
    headers = {} if token is None else bearer(token or job["callback"]["token"])
    return await api.post(f"{job['callback']['url']}/logs", json={"entries": entries}, headers=headers)


async def all_logs(api: httpx.AsyncClient, execution_id: str, **params: Any) -> list[dict[str, Any]]:
    items, cursor = [], None
    while True:
        page = await api.get(f"/v1/executions/{execution_id}/logs",
                             params={**params, **({"cursor": cursor} if cursor else {})})
        assert page.status_code == 200, page.text
        items += page.json()["items"]
        cursor = page.json()["next_cursor"]
        if cursor is None:
            return items


# --- logs ------------------------------------------------------------------------------------

async def test_log_messages_are_stored_normalized_with_their_attempt(api, handler, db: Database) -> None:
    job = await accepted(api, handler)
    long_latin = "a" * 10_000
    emoji = "😀" * 9000  # 9000 code points, 18000 UTF-16 units
    entries = [
        {"level": "INFO", "message": "nul\x00in the middle\x00"},
        {"level": "WARN", "message": "bell\x07\x07 and escape\x1b[31m and DEL\x7f stays"},
        {"level": "INFO", "message": "tabs\tand\nnewlines\r\nkept"},
        {"level": "ERROR", "message": long_latin},
        {"level": "INFO", "message": "Ελληνικά, русский, 日本語, עברית, العربية"},
        {"level": "INFO", "message": emoji},
        {"level": "INFO", "message": None},
        {"level": "INFO", "message": "\x01\x02" + "b" * 8192},  # stripped first, then 8192: not truncated
        {"level": "WARN", "message": "", "logged_at": "2030-01-02T03:04:05.123+02:00"},
    ]
    response = await post_logs(api, job, entries)
    assert response.status_code == 200, response.text
    assert response.json() == {"stored": len(entries)}

    stored = await all_logs(api, job["execution_id"])
    assert [e["message"] for e in stored] == [
        "nulin the middle",
        "bell and escape[31m and DEL\x7f stays",
        "tabs\tand\nnewlines\r\nkept",
        "a" * 8192 + TRUNCATED.format(10_000 - 8192),
        "Ελληνικά, русский, 日本語, עברית, العربية",
        "😀" * 8192 + TRUNCATED.format(9000 - 8192),
        "<null>",
        "b" * 8192,
        "",
    ]
    assert [e["level"] for e in stored] == [e["level"] for e in entries]
    assert {e["attempt"] for e in stored} == {0}
    assert stored[-1]["logged_at"] == "2030-01-02T01:04:05.123000Z"
    # PostgreSQL counts the emoji line in code points, as the API does.
    async with db.transaction() as conn:
        lengths = [r[0] for r in await fetch(
            conn, "SELECT char_length(message) FROM job_logs WHERE execution_id = :id ORDER BY id",
            id=UUID(job["execution_id"]))]
    assert lengths[5] == 8192 + len(TRUNCATED.format(808))


async def test_logged_at_defaults_to_the_time_it_is_stored(api, handler) -> None:
    job = await accepted(api, handler)
    started = (await api.get(f"/v1/executions/{job['execution_id']}")).json()["started_at"]
    assert (await post_logs(api, job, [{"level": "INFO", "message": "now"}])).status_code == 200
    [entry] = await all_logs(api, job["execution_id"])
    assert datetime.fromisoformat(entry["logged_at"]) >= datetime.fromisoformat(started)


async def test_500_entries_are_stored_and_501_are_refused_naming_the_limit(api, handler) -> None:
    job = await accepted(api, handler)
    refused = await post_logs(api, job, [{"level": "INFO", "message": str(i)} for i in range(501)])
    assert refused.status_code == 422, refused.text
    assert refused.headers["content-type"] == "application/problem+json"
    [error] = refused.json()["errors"]
    assert error["field"] == "entries" and "500" in error["message"]
    assert await all_logs(api, job["execution_id"]) == []
    accepted_ = await post_logs(api, job, [{"level": "INFO", "message": str(i)} for i in range(500)])
    assert accepted_.json() == {"stored": 500}
    assert [e["message"] for e in await all_logs(api, job["execution_id"], limit=500)] == [str(i) for i in range(500)]


@pytest.mark.parametrize(("entries", "field"), [
    pytest.param([{"level": "info", "message": "x"}], "entries[0].level", id="lower-case-level"),
    pytest.param([{"level": "DEBUG", "message": "x"}], "entries[0].level", id="unknown-level"),
    pytest.param([{"level": "INFO"}], "entries[0].message", id="message-missing"),
    pytest.param([{"level": "INFO", "message": 5}], "entries[0].message", id="message-a-number"),
    pytest.param([{"level": "INFO", "message": "x", "colour": 1}], "entries[0].colour", id="unknown-field"),
    pytest.param([{"level": "INFO", "message": "x", "logged_at": "2030-01-01T00:00:00"}], "entries[0].logged_at",
                 id="logged-at-without-zone"),
    pytest.param([{"level": "INFO", "message": "x", "logged_at": 1893456000}], "entries[0].logged_at",
                 id="logged-at-a-number"),
    pytest.param({"level": "INFO", "message": "x"}, "entries", id="entries-not-a-list"),
    pytest.param([{"level": "INFO", "message": "x", "a\u0000": 1}], "entries[0]", id="nul-in-a-key"),
    pytest.param([{"level": "INFO\u0000", "message": "x"}], "entries[0].level", id="nul-in-the-level"),
])
async def test_bad_log_entries_are_422_naming_the_field(api, handler, entries: Any, field: str) -> None:
    job = await accepted(api, handler)
    response = await post_logs(api, job, entries)
    assert response.status_code == 422, response.text
    assert field in [e["field"] for e in response.json()["errors"]]
    assert await all_logs(api, job["execution_id"]) == []


async def test_logs_are_paged_oldest_first_across_attempts(api, handler) -> None:
    first = await accepted(api, handler, max_attempts=3)
    await post_logs(api, first, [{"level": "INFO", "message": f"a{i}"} for i in range(70)])
    failed = await api.post(f"{first['callback']['url']}/complete", headers=bearer(first["callback"]["token"]),
                            json={"outcome": "failed", "error": {"message": "again"}})
    assert failed.json()["attempt"] == 1
    await handler.wait_for(2)
    second = handler.received[1]
    await post_logs(api, second, [{"level": "WARN", "message": f"b{i}"} for i in range(60)])

    page = await api.get(f"/v1/executions/{first['execution_id']}/logs")
    assert len(page.json()["items"]) == 50 and page.json()["next_cursor"]  # limit defaults to 50
    stored = await all_logs(api, first["execution_id"], limit=45)
    assert [e["message"] for e in stored] == [f"a{i}" for i in range(70)] + [f"b{i}" for i in range(60)]
    assert [e["attempt"] for e in stored] == [0] * 70 + [1] * 60
    last = await api.get(f"/v1/executions/{first['execution_id']}/logs", params={"limit": 130})
    assert last.json()["next_cursor"] is None


@pytest.mark.parametrize("params", [{"cursor": "not-a-cursor"}, {"cursor": "eyJsb2ciOi0xfQ"}, {"limit": 0},
                                    {"limit": 501}, {"cursor": "WyIyMDMwLTAxLTAxVDAwOjAwOjAwKzAwOjAwIiwiMSJd"}])
async def test_bad_log_page_parameters_are_422(api, handler, params: dict[str, Any]) -> None:
    job = await accepted(api, handler)
    response = await api.get(f"/v1/executions/{job['execution_id']}/logs", params=params)
    assert response.status_code == 422, response.text
    assert [e["field"] for e in response.json()["errors"]] == list(params)


async def test_logs_of_an_unknown_execution_are_404(api) -> None:
    response = await api.get("/v1/executions/00000000-0000-4000-8000-000000000000/logs")
    assert response.status_code == 404 and response.headers["content-type"] == "application/problem+json"


async def test_log_callbacks_check_the_token_and_refuse_a_stale_attempt(api, handler) -> None:
    first = await accepted(api, handler, max_attempts=3)
    entry = [{"level": "INFO", "message": "x"}]
    assert (await post_logs(api, first, entry, token=None)).status_code == 401
    assert (await post_logs(api, first, entry, token="0." + "A" * 43)).status_code == 403
    await api.post(f"{first['callback']['url']}/complete", headers=bearer(first["callback"]["token"]),
                   json={"outcome": "failed", "error": {"message": "again"}})
    await handler.wait_for(2)
    stale = await post_logs(api, first, entry)
    assert stale.status_code == 409 and stale.headers["content-type"] == "application/problem+json"
    assert (await post_logs(api, handler.received[1], entry)).json() == {"stored": 1}


async def test_a_handler_may_log_after_completing(api, handler) -> None:
    job = await accepted(api, handler)
    done = await api.post(f"{job['callback']['url']}/complete", headers=bearer(job["callback"]["token"]),
                          json={"outcome": "succeeded"})
    assert done.json()["state"] == "SUCCEEDED"
    assert (await post_logs(api, job, [{"level": "INFO", "message": "flushed late"}])).json() == {"stored": 1}


# --- steps ------------------------------------------------------------------------------------

async def test_a_step_recorded_on_attempt_0_replays_on_attempt_1_without_running_again(api, handler) -> None:
    """The handler charges a card once: it records the step, then fails retryably; attempt 1
    finds the step and skips the charge."""
    charges: list[int] = []
    seen: list[tuple[int, int, Any]] = []

    async def charge_then_fail_once(_: web.Request, job: dict[str, Any]) -> web.StreamResponse:
        step_url = f"{job['callback']['url']}/steps/charge-card"
        async with httpx.AsyncClient(headers=bearer(job["callback"]["token"]), timeout=10) as client:
            found = await client.get(step_url)
            if found.status_code == 404:
                charges.append(job["attempt"])  # the side effect, run once
                recorded = await client.put(step_url, json={"result": {"charge_id": "ch_1", "amount": 12.5}})
                seen.append((job["attempt"], recorded.status_code, recorded.json()))
            else:
                seen.append((job["attempt"], found.status_code, found.json()))
            again = await client.put(step_url, json={"result": {"charge_id": "ch_other"}})
            seen.append((job["attempt"], again.status_code, again.json()["result"]))
        if job["attempt"] == 0:
            return web.Response(status=503, text="card network hiccup")  # retryable
        step = seen[-2][2]
        return web.json_response({"result": {"charged": step["result"]["charge_id"]}})

    await register(api, "payments", handler.route("/payments", charge_then_fail_once))
    job = (await api.post("/v1/jobs", json={"handler": "payments", "max_attempts": 3})).json()
    done = await wait_for_state(api, job["id"], "SUCCEEDED")
    assert done["attempt"] == 1 and done["result"] == {"charged": "ch_1"}
    assert charges == [0]
    (a0, put_status, put_body), (_, repeat0, kept0), (a1, get_status, got), (_, repeat1, kept1) = seen
    assert (a0, put_status, a1, get_status, repeat0, repeat1) == (0, 201, 1, 200, 200, 200)
    assert put_body["name"] == "charge-card" and put_body["result"] == {"charge_id": "ch_1", "amount": 12.5}
    assert got == put_body  # same result, same completed_at, on the later attempt
    assert kept0 == kept1 == {"charge_id": "ch_1", "amount": 12.5}


async def test_a_step_is_404_until_recorded_and_a_repeat_keeps_the_first_result(api, handler) -> None:
    job = await accepted(api, handler)
    url, headers = f"{job['callback']['url']}/steps/export:part-1.csv", bearer(job["callback"]["token"])
    missing = await api.get(url, headers=headers)
    assert missing.status_code == 404 and missing.headers["content-type"] == "application/problem+json"
    first = await api.put(url, json={"result": [1, 2, 3]}, headers=headers)
    assert first.status_code == 201, first.text
    assert first.json()["name"] == "export:part-1.csv" and first.json()["result"] == [1, 2, 3]
    repeat = await api.put(url, json={"result": "different"}, headers=headers)
    assert repeat.status_code == 200 and repeat.json() == first.json()
    assert (await api.get(url, headers=headers)).json() == first.json()
    null = await api.put(f"{job['callback']['url']}/steps/no-result", json={}, headers=headers)
    assert null.status_code == 201 and null.json()["result"] is None


async def test_concurrent_records_of_one_step_keep_exactly_one(api, handler) -> None:
    job = await accepted(api, handler)
    url, headers = f"{job['callback']['url']}/steps/once", bearer(job["callback"]["token"])
    responses = await asyncio.gather(*(api.put(url, json={"result": i}, headers=headers) for i in range(10)))
    assert sorted(r.status_code for r in responses) == [200] * 9 + [201]
    [winner] = [r.json()["result"] for r in responses if r.status_code == 201]
    assert {r.json()["result"] for r in responses} == {winner}


async def test_step_callbacks_check_names_tokens_and_stale_attempts(api, handler) -> None:
    first = await accepted(api, handler, max_attempts=3)
    base, token = first["callback"]["url"], first["callback"]["token"]
    assert (await api.get(f"{base}/steps/ok")).status_code == 401
    assert (await api.put(f"{base}/steps/ok", json={"result": 1}, headers=bearer("0." + "A" * 43))).status_code == 403
    for bad in ("-leading-dash", "has space", "x" * 256):
        response = await api.put(f"{base}/steps/{bad}", json={"result": 1}, headers=bearer(token))
        assert response.status_code == 422, (bad, response.text)
        assert [e["field"] for e in response.json()["errors"]] == ["name"]
    unknown_field = await api.put(f"{base}/steps/ok", json={"result": 1, "extra": 2}, headers=bearer(token))
    assert unknown_field.status_code == 422
    assert (await api.put(f"{base}/steps/ok", json={"result": 1}, headers=bearer(token))).status_code == 201
    await api.post(f"{base}/complete", headers=bearer(token), json={"outcome": "failed", "error": {"message": "x"}})
    await handler.wait_for(2)
    assert (await api.get(f"{base}/steps/ok", headers=bearer(token))).status_code == 409
    assert (await api.put(f"{base}/steps/new", json={"result": 1}, headers=bearer(token))).status_code == 409
    current = bearer(handler.received[1]["callback"]["token"])
    assert (await api.get(f"{base}/steps/ok", headers=current)).json()["result"] == 1
    assert (await api.get(f"{base}/steps/new", headers=current)).status_code == 404


# --- API keys: the logs listing is a management route; the callbacks ignore API keys -----------

@pytest.fixture
async def keyed(jobwire: Callable[..., Awaitable[RunningServer]]) -> AsyncIterator[httpx.AsyncClient]:
    server = await jobwire(api_keys=["k1"])
    async with httpx.AsyncClient(base_url=server.url, timeout=10, headers=bearer("k1")) as client:
        yield client


async def test_reading_logs_takes_an_api_key_and_writing_them_takes_the_callback_token(keyed, handler) -> None:
    job = await accepted(keyed, handler)
    listing = f"/v1/executions/{job['execution_id']}/logs"
    assert (await keyed.get(listing, headers={"authorization": ""})).status_code == 401
    with_key = await keyed.post(f"{job['callback']['url']}/logs", json={"entries": []})  # the key, not a token
    assert with_key.status_code == 403
    assert (await post_logs(keyed, job, [{"level": "INFO", "message": "hi"}])).json() == {"stored": 1}
    step = await keyed.put(f"{job['callback']['url']}/steps/s", json={"result": 1},
                           headers=bearer(job["callback"]["token"]))
    assert step.status_code == 201
    assert [e["message"] for e in (await keyed.get(listing)).json()["items"]] == ["hi"]
