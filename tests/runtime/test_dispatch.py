"""The dispatcher against a real handler on loopback: success, 202 + callback, retries,
dead letters, deadlines, signatures, and the callback token rules."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import UUID

import httpx
from aiohttp import web
from standardwebhooks.webhooks import Webhook

from app.db.executions import ExecutionRepository
from app.db.statements import fetchval
from tests.conftest import register, wait_for_state


def status(code: int, headers: dict[str, str] | None = None, body: Any = None):
    async def reply(_: web.Request, __: dict[str, Any]) -> web.StreamResponse:
        return web.json_response(body, status=code, headers=headers)
    return reply


def failing_then_ok(failures: int, code: int = 500):
    calls = {"n": 0}

    async def reply(_: web.Request, job: dict[str, Any]) -> web.StreamResponse:
        calls["n"] += 1
        if calls["n"] <= failures:
            return web.Response(status=code, text="boom\x00 with a NUL")
        return web.json_response({"result": {"attempt": job["attempt"]}})
    return reply


async def enqueue(api: httpx.AsyncClient, **body: Any) -> dict[str, Any]:
    response = await api.post("/v1/jobs", json=body)
    assert response.status_code == 201, response.text
    return response.json()


async def complete(api: httpx.AsyncClient, job: dict[str, Any], token: str | None = None,
                   **body: Any) -> httpx.Response:
    headers = {} if token == "" else {"authorization": f"Bearer {token or job['callback']['token']}"}
    return await api.post(f"/v1/executions/{job['execution_id']}/complete", json=body, headers=headers)


async def events(db, execution_id: str) -> list[tuple[str, int]]:
    async with db.transaction() as conn:
        rows = await ExecutionRepository().events(conn, UUID(execution_id))
    return [(e["new_state"], e["attempt"]) for e in rows]


async def test_sync_success_stores_result_and_is_signed_per_standard_webhooks(api, handler, db):
    secret = (await register(api, "echo", handler.route("/echo", status(200, body={"result": {"ok": 1}}))))["secret"]
    job = await enqueue(api, handler="echo", payload={"n": 1}, metadata={"context": {"k": "v"}})
    done = await wait_for_state(api, job["id"], "SUCCEEDED")
    assert done["result"] == {"ok": 1}
    assert done["locked_by"] is None and done["completed_at"] is not None

    [sent] = handler.received
    assert sent["execution_id"] == job["id"] and sent["attempt"] == 0 and sent["payload"] == {"n": 1}
    assert sent["metadata"] == {"context": {"k": "v"}}
    assert sent["callback"]["url"].endswith(f"/v1/executions/{job['id']}")
    headers = handler.headers[0]
    assert headers["webhook-id"] == job["id"] and headers["jobwire-attempt"] == "0"
    Webhook(secret).verify(handler.bodies[0], {k.lower(): v for k, v in headers.items()})
    assert await events(db, job["id"]) == [("SUCCEEDED", 0)]  # the insert and the claim write none (DESIGN §8)


async def test_a_202_is_completed_by_the_callback_and_a_duplicate_is_a_no_op(api, handler):
    await register(api, "slow", handler.route("/slow", status(202)))
    job = await enqueue(api, handler="slow")
    await handler.wait_for(1)
    accepted = await wait_for_state(api, job["id"], "PROCESSING")
    for _ in range(100):  # the node lets go once the 202 is recorded
        if accepted["locked_by"] is None:
            break
        await asyncio.sleep(0.02)
        accepted = (await api.get(f"/v1/executions/{job['id']}")).json()
    assert accepted["locked_by"] is None

    sent = handler.received[0]
    first = await complete(api, sent, outcome="succeeded", result={"rows": 3})
    assert first.status_code == 200 and first.json()["state"] == "SUCCEEDED"
    assert first.json()["result"] == {"rows": 3}
    again = await complete(api, sent, outcome="failed", error={"message": "late"})
    assert again.status_code == 200 and again.json()["state"] == "SUCCEEDED"
    assert again.json()["result"] == {"rows": 3}


async def test_a_failed_attempt_is_retried_then_succeeds_with_its_events(api, handler, db):
    await register(api, "flaky", handler.route("/flaky", failing_then_ok(1)))
    job = await enqueue(api, handler="flaky")
    done = await wait_for_state(api, job["id"], "SUCCEEDED")
    assert done["attempt"] == 1 and done["result"] == {"attempt": 1}
    assert (done["error_type"], done["last_error"]) == (None, None)  # succeeded: the failure is history
    failed_attempt = (await api.get(f"/v1/executions/{job['id']}/attempts")).json()["items"][0]
    assert failed_attempt["error_type"] == "http_status" and "HTTP 500" in failed_attempt["error"]
    assert "\x00" not in failed_attempt["error"]
    # The insert and the claims write no event row (DESIGN §8): the handler's calls are the claims.
    assert await events(db, job["id"]) == [("FAILED", 0), ("ENQUEUED", 1), ("SUCCEEDED", 1)]
    assert [r["attempt"] for r in handler.received] == [0, 1]

    async with db.transaction() as conn:
        failed, requeued, succeeded = await ExecutionRepository().events(conn, UUID(job["id"]))
    # Each outcome names the start of the attempt it ended: the last, the start its claim gave the row.
    assert failed["started_at"] is not None and failed["completed_at"] is not None
    assert requeued["started_at"] is None and requeued["completed_at"] is None  # re-enqueued
    started = datetime.fromisoformat(succeeded["started_at"])
    assert started == datetime.fromisoformat(done["started_at"])
    assert datetime.fromisoformat(failed["started_at"]) < started


async def test_spent_attempts_end_in_dead_letter(api, handler, db):
    await register(api, "broken", handler.route("/broken", status(500, body={"error": "x" * 5000})))
    job = await enqueue(api, handler="broken", max_attempts=3)
    dead = await wait_for_state(api, job["id"], "DEAD_LETTER")
    assert dead["attempt"] == 2 and dead["error_type"] == "http_status"
    assert len(dead["last_error"]) < 2100  # truncated
    assert await events(db, job["id"]) == [  # the whole trail: the insert and the claims write none
        ("FAILED", 0), ("ENQUEUED", 1), ("FAILED", 1), ("ENQUEUED", 2), ("FAILED", 2), ("DEAD_LETTER", 2)]
    assert len(handler.received) == 3


async def test_a_connection_error_is_a_failed_attempt_of_type_connection(api, handler):
    from tests.conftest import free_port

    await register(api, "nobody", f"http://127.0.0.1:{free_port()}/gone")
    job = await enqueue(api, handler="nobody", max_attempts=1)
    dead = await wait_for_state(api, job["id"], "DEAD_LETTER")
    assert dead["error_type"] == "connection"


async def test_retry_after_on_429_sets_the_delay(jobwire, handler, db):
    server = await jobwire(retry_max_delay=30.0)
    async with httpx.AsyncClient(base_url=server.url) as api:
        await register(api, "busy", handler.route("/busy", status(429, headers={"Retry-After": "7"})))
        job = await enqueue(api, handler="busy", max_attempts=2)
        waiting = None
        for _ in range(200):
            waiting = (await api.get(f"/v1/executions/{job['id']}")).json()
            if waiting["attempt"] == 1:
                break
            await asyncio.sleep(0.02)
    assert waiting and waiting["state"] == "ENQUEUED" and waiting["attempt"] == 1
    async with db.transaction() as conn:
        delay = await fetchval(conn,
            "SELECT EXTRACT(EPOCH FROM scheduled_at - updated_at) FROM job_executions WHERE id = :id", id=job["id"])
    assert abs(float(delay) - 7.0) < 0.01


async def test_a_call_open_at_its_deadline_is_abandoned_and_a_late_success_still_wins(api, handler, db):
    async def hang(_: web.Request, __: dict[str, Any]) -> web.StreamResponse:
        await asyncio.sleep(3)
        return web.json_response({"result": "too late"})

    await register(api, "hangs", handler.route("/hangs", hang))
    job = await enqueue(api, handler="hangs", timeout_seconds=0.3, max_attempts=1)
    dead = await wait_for_state(api, job["id"], "DEAD_LETTER")
    assert dead["error_type"] == "abandoned_deadline"
    assert await events(db, job["id"]) == [("ABANDONED", 0), ("DEAD_LETTER", 0)]  # no insert's, no claim's

    # The handler's work did finish: a success for this attempt overrides an abandoned dead letter.
    late = await complete(api, handler.received[0], outcome="succeeded", result={"late": True})
    assert late.status_code == 200 and late.json()["state"] == "SUCCEEDED"


async def test_a_failure_reply_dead_letter_is_not_overridden_by_a_late_success(api, handler):
    await register(api, "accepts", handler.route("/accepts", status(202)))
    await enqueue(api, handler="accepts", max_attempts=1)
    await handler.wait_for(1)
    sent = handler.received[0]
    failed = await complete(api, sent, outcome="failed", error={"message": "bad input", "type": "validation"})
    assert failed.json()["state"] == "DEAD_LETTER" and failed.json()["error_type"] == "validation"
    late = await complete(api, sent, outcome="succeeded")
    assert late.status_code == 200 and late.json()["state"] == "DEAD_LETTER"


async def test_a_handler_cannot_report_a_failure_that_looks_like_an_abandonment(api, handler):
    """Only abandonments Jobwire recorded itself lose to a late success: a reported failure of
    type abandoned_* is refused (422 naming error.type), so a failure stays a failure."""
    await register(api, "accepts", handler.route("/accepts", status(202)))
    job = await enqueue(api, handler="accepts", max_attempts=1)
    await handler.wait_for(1)
    sent = handler.received[0]
    forged = await complete(api, sent, outcome="failed", retryable=False,
                            error={"message": "bad input", "type": "abandoned_deadline"})
    assert forged.status_code == 422, forged.text
    assert [e["field"] for e in forged.json()["errors"]] == ["error.type"]
    assert (await api.get(f"/v1/executions/{job['id']}")).json()["state"] == "PROCESSING"

    failed = await complete(api, sent, outcome="failed", retryable=False,
                            error={"message": "bad input", "type": "validation"})
    assert failed.json()["state"] == "DEAD_LETTER"
    late = await complete(api, sent, outcome="succeeded")
    assert late.json()["state"] == "DEAD_LETTER"


async def test_callback_tokens_missing_forged_foreign_and_stale(api, handler):
    await register(api, "accepts", handler.route("/accepts", status(202)))
    one = await enqueue(api, handler="accepts", max_attempts=3)
    other = await enqueue(api, handler="accepts")
    await handler.wait_for(2)
    sent = {r["execution_id"]: r for r in handler.received}
    mine, theirs = sent[one["id"]], sent[other["id"]]

    assert (await complete(api, mine, token="", outcome="succeeded")).status_code == 401
    forged = "0." + "A" * 43
    assert (await complete(api, mine, token=forged, outcome="succeeded")).status_code == 403
    assert (await complete(api, mine, token=theirs["callback"]["token"], outcome="succeeded")).status_code == 403

    # A retryable failure moves the execution to attempt 1; attempt 0's token is now stale.
    retried = await complete(api, mine, outcome="failed", error={"message": "try again"})
    assert retried.json()["state"] == "ENQUEUED" and retried.json()["attempt"] == 1
    stale = await complete(api, mine, outcome="succeeded")
    assert stale.status_code == 409
    assert stale.headers["content-type"] == "application/problem+json"


async def test_cancel_a_queued_job_then_retry_it_manually(api, handler):
    await register(api, "echo", handler.route("/echo", status(200, body={"result": 1})))
    later = (datetime.now(UTC) + timedelta(hours=1)).isoformat()
    job = await enqueue(api, handler="echo", run_at=later)
    cancelled = await api.post(f"/v1/executions/{job['id']}/cancel")
    assert cancelled.status_code == 200 and cancelled.json()["state"] == "CANCELLED"
    assert (await api.post(f"/v1/executions/{job['id']}/cancel")).status_code == 409

    retried = await api.post(f"/v1/executions/{job['id']}/retry")
    assert retried.status_code == 200
    assert retried.json()["state"] == "ENQUEUED" and retried.json()["attempt"] == 1
    done = await wait_for_state(api, job["id"], "SUCCEEDED")
    assert done["attempt"] == 1
    assert [r["attempt"] for r in handler.received] == [1]


async def test_manual_retry_from_dead_letter_starts_a_new_attempt_beyond_max_attempts(api, handler):
    await register(api, "flaky", handler.route("/flaky", failing_then_ok(1)))
    job = await enqueue(api, handler="flaky", max_attempts=1)
    dead = await wait_for_state(api, job["id"], "DEAD_LETTER")
    assert dead["attempt"] == 0
    retried = (await api.post(f"/v1/executions/{job['id']}/retry")).json()
    assert retried["attempt"] == 1 and retried["max_attempts"] == 2
    done = await wait_for_state(api, job["id"], "SUCCEEDED")
    assert done["result"] == {"attempt": 1}
    assert (await api.post(f"/v1/executions/{job['id']}/retry")).status_code == 409


async def test_claims_follow_priority_then_scheduled_at(jobwire, handler):
    holder = await jobwire(queues=["elsewhere"])  # enqueues, never claims from "default"
    now = datetime.now(UTC)

    def at(seconds: float) -> str:
        return (now + timedelta(seconds=seconds)).isoformat()

    async with httpx.AsyncClient(base_url=holder.url) as api:
        await register(api, "echo", handler.route("/echo", status(200)))
        batch = [
            {"handler": "echo", "job_id": "A", "priority": 0, "run_at": at(-10)},
            {"handler": "echo", "job_id": "B", "priority": 5, "run_at": at(-5)},
            {"handler": "echo", "job_id": "C", "priority": 1, "run_at": at(-8)},
            {"handler": "echo", "job_id": "D", "priority": 0, "run_at": at(-20)},
            {"handler": "echo", "job_id": "E", "priority": 9, "run_at": at(1.5)},
        ]
        assert (await api.post("/v1/jobs/batch", json={"jobs": batch})).status_code == 201
        await jobwire(concurrency=1)
        await handler.wait_for(5)
    assert [r["job_id"] for r in handler.received] == ["B", "C", "D", "A", "E"]


async def test_an_enqueue_wakes_an_idle_dispatcher_before_the_poll(jobwire, handler):
    server = await jobwire(poll_interval=30.0)
    async with httpx.AsyncClient(base_url=server.url) as api:
        await register(api, "echo", handler.route("/echo", status(200)))
        await asyncio.sleep(0.3)  # the dispatcher is idle now, its next poll 30 s away
        job = await enqueue(api, handler="echo")
        await wait_for_state(api, job["id"], "SUCCEEDED", timeout=5)


async def test_a_result_that_cannot_be_stored_is_a_failed_attempt(api, handler):
    async def nul_result(_: web.Request, __: dict[str, Any]) -> web.StreamResponse:
        return web.Response(body=b'{"result": "a\\u0000b"}', content_type="application/json")

    await register(api, "nul", handler.route("/nul", nul_result))
    job = await enqueue(api, handler="nul", max_attempts=1)
    dead = await wait_for_state(api, job["id"], "DEAD_LETTER")
    assert dead["error_type"] == "handler_failed"


async def test_a_reply_over_the_size_cap_is_refused_as_a_failed_attempt(jobwire, handler):
    server = await jobwire(max_payload_bytes=1000)
    async with httpx.AsyncClient(base_url=server.url) as api:
        await register(api, "big", handler.route("/big", status(200, body={"result": "x" * 5000})))
        job = await enqueue(api, handler="big", max_attempts=1)
        dead = await wait_for_state(api, job["id"], "DEAD_LETTER")
    assert dead["error_type"] == "response_too_large"


async def test_redirects_are_not_followed(api, handler):
    target = handler.route("/target", status(200))
    await register(api, "moved", handler.route("/moved", status(302, headers={"Location": target})))
    job = await enqueue(api, handler="moved", max_attempts=1)
    dead = await wait_for_state(api, job["id"], "DEAD_LETTER")
    assert "302" in dead["last_error"]
    assert all(h.get("webhook-id") for h in handler.headers) and len(handler.received) == 1


async def test_concurrent_success_callbacks_each_apply_once_and_duplicates_are_no_ops(api, handler, db):
    # 40 callbacks at once (two per job, different results): they share statements, and each
    # job still ends with one success, one event, and both callers told the stored result.
    await register(api, "slow", handler.route("/slow", status(202)))
    batch = await api.post("/v1/jobs/batch", json={"jobs": [{"handler": "slow"} for _ in range(20)]})
    assert batch.status_code == 201, batch.text
    await handler.wait_for(20)
    calls = [(sent, {"from": side}) for sent in handler.received for side in ("a", "b")]
    replies = await asyncio.gather(*(complete(api, sent, outcome="succeeded", result=result)
                                     for sent, result in calls))
    assert all(r.status_code == 200 and r.json()["state"] == "SUCCEEDED" for r in replies), replies
    for sent in handler.received:
        stored = (await api.get(f"/v1/executions/{sent['execution_id']}")).json()["result"]
        assert stored in ({"from": "a"}, {"from": "b"})
        told = [r.json()["result"] for r in replies if r.json()["id"] == sent["execution_id"]]
        assert told == [stored, stored]
        assert await events(db, sent["execution_id"]) == [("SUCCEEDED", 0)]  # one success; no insert's, no claim's
    # Each job claimed and called once (the claim writes no event row to count: DESIGN §8).
    assert len({sent["execution_id"] for sent in handler.received}) == len(handler.received) == 20
