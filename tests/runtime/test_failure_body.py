"""A handler's failing answer that names its error (`{"error": {"type", "message"}, "retryable"?}`,
DESIGN §5), against a real dispatcher and a real handler on loopback: the execution and each of
its attempts keep that error; `retryable: false` dead-letters at once; any other body is recorded
as it always was."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
from aiohttp import web

from app.db.statements import fetchval
from tests.conftest import HandlerServer, register, wait_for_state


def answers(*replies: tuple[Any, ...]):
    """A handler that gives `replies` in turn (status, JSON body[, headers]), then succeeds."""
    calls = {"n": 0}

    async def reply(_: web.Request, job: dict[str, Any]) -> web.StreamResponse:
        calls["n"] += 1
        if calls["n"] <= len(replies):
            status, body, *headers = replies[calls["n"] - 1]
            return web.json_response(body, status=status, headers=headers[0] if headers else None)
        return web.json_response({"result": {"attempt": job["attempt"]}})
    return reply


def failure(error_type: str, message: str, **extra: Any) -> dict[str, Any]:
    return {"error": {"type": error_type, "message": message}, **extra}


async def enqueue(api: httpx.AsyncClient, **body: Any) -> dict[str, Any]:
    response = await api.post("/v1/jobs", json=body)
    assert response.status_code == 201, response.text
    return response.json()


async def wait_for_attempt(api: httpx.AsyncClient, execution_id: str, attempt: int) -> dict[str, Any]:
    for _ in range(500):
        body = (await api.get(f"/v1/executions/{execution_id}")).json()
        if body["attempt"] >= attempt:
            return dict(body)
        await asyncio.sleep(0.02)
    raise AssertionError(f"execution {execution_id} never reached attempt {attempt}: {body}")


async def attempts(api: httpx.AsyncClient, execution_id: str) -> list[dict[str, Any]]:
    response = await api.get(f"/v1/executions/{execution_id}/attempts")
    assert response.status_code == 200, response.text
    return [{key: a[key] for key in ("attempt", "state", "error_type", "error", "http_status")}
            for a in response.json()["items"]]


async def test_each_attempt_keeps_the_error_its_reply_named(api: httpx.AsyncClient, handler: HandlerServer) -> None:
    await register(api, "flaky", handler.route("/flaky", answers(
        (503, failure("UpstreamTimeout", "the rates API timed out")),
        (500, failure("ValueError", "rate of 'XYZ' is not a number")))))
    job = await enqueue(api, handler="flaky", max_attempts=3)

    done = await wait_for_state(api, job["id"], "SUCCEEDED")

    assert done["result"] == {"attempt": 2}
    assert await attempts(api, job["id"]) == [
        {"attempt": 0, "state": "FAILED", "error_type": "UpstreamTimeout", "error": "the rates API timed out",
         "http_status": 503},
        {"attempt": 1, "state": "FAILED", "error_type": "ValueError", "error": "rate of 'XYZ' is not a number",
         "http_status": 500},
        {"attempt": 2, "state": "SUCCEEDED", "error_type": None, "error": None, "http_status": 200},
    ]


async def test_retryable_false_dead_letters_after_one_attempt(api: httpx.AsyncClient, handler: HandlerServer) -> None:
    await register(api, "strict", handler.route("/strict", answers(
        (422, failure("bad_payload", "the payload names no customer", retryable=False)))))
    job = await enqueue(api, handler="strict", max_attempts=5)

    dead = await wait_for_state(api, job["id"], "DEAD_LETTER")

    assert (dead["attempt"], dead["error_type"], dead["last_error"]) == (
        0, "bad_payload", "the payload names no customer")
    assert await attempts(api, job["id"]) == [
        {"attempt": 0, "state": "FAILED", "error_type": "bad_payload", "error": "the payload names no customer",
         "http_status": 422}]
    assert len(handler.received) == 1


async def test_a_reported_abandonment_stays_a_failure_a_late_success_cannot_override(
        api: httpx.AsyncClient, handler: HandlerServer) -> None:
    await register(api, "sly", handler.route("/sly", answers(
        (500, failure("abandoned_deadline", "not really abandoned\x00", retryable=False)))))
    job = await enqueue(api, handler="sly", max_attempts=5)

    dead = await wait_for_state(api, job["id"], "DEAD_LETTER")
    assert (dead["error_type"], dead["last_error"]) == ("http_status", "not really abandoned")

    sent = handler.received[0]
    late = await api.post(f"/v1/executions/{job['id']}/complete", json={"outcome": "succeeded"},
                          headers={"authorization": f"Bearer {sent['callback']['token']}"})
    assert late.status_code == 200 and late.json()["state"] == "DEAD_LETTER"


async def test_retry_after_still_sets_the_delay_of_a_failure_that_names_its_error(jobwire, handler, db) -> None:
    server = await jobwire(retry_max_delay=30.0)
    async with httpx.AsyncClient(base_url=server.url) as api:
        await register(api, "busy", handler.route("/busy", answers(
            (429, failure("RateLimited", "slow down"), {"Retry-After": "7"}))))
        job = await enqueue(api, handler="busy", max_attempts=2)
        waiting = await wait_for_attempt(api, job["id"], 1)
    assert (waiting["state"], waiting["error_type"], waiting["last_error"]) == ("ENQUEUED", "RateLimited", "slow down")
    async with db.transaction() as conn:
        delay = await fetchval(conn, "SELECT EXTRACT(EPOCH FROM scheduled_at - updated_at) FROM job_executions "
                                     "WHERE id = :id", id=job["id"])
    assert abs(float(delay) - 7.0) < 0.01


async def test_another_body_is_recorded_as_its_status_line_and_start(api: httpx.AsyncClient,
                                                                     handler: HandlerServer) -> None:
    await register(api, "plain", handler.route("/plain", answers((500, {"error": "bad signature"}))))
    job = await enqueue(api, handler="plain", max_attempts=1)

    dead = await wait_for_state(api, job["id"], "DEAD_LETTER")

    assert dead["error_type"] == "http_status"
    assert dead["last_error"] == 'HTTP 500 Internal Server Error: {"error": "bad signature"}'
