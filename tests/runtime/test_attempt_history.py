"""GET /v1/executions/{id}/attempts and /events against a real dispatcher and real handlers:
each attempt's own outcome, times, node, HTTP status and error; the typed events; the WARNING
line per failed, abandoned or dead-lettered attempt (DEBUG for a success)."""

from __future__ import annotations

import asyncio
import logging
from datetime import datetime
from typing import Any

import httpx
from aiohttp import web

from tests.conftest import register, wait_for_state

OUTCOMES = "app.services.outcomes"


def status(code: int, body: Any = None):
    async def reply(_: web.Request, __: dict[str, Any]) -> web.StreamResponse:
        return web.json_response(body, status=code)
    return reply


def failing_then_ok(failures: int):
    calls = {"n": 0}

    async def reply(_: web.Request, job: dict[str, Any]) -> web.StreamResponse:
        calls["n"] += 1
        if calls["n"] <= failures:
            return web.Response(status=500, text=f"boom {calls['n']}")
        return web.json_response({"result": {"attempt": job["attempt"]}})
    return reply


async def enqueue(api: httpx.AsyncClient, **body: Any) -> dict[str, Any]:
    response = await api.post("/v1/jobs", json=body)
    assert response.status_code == 201, response.text
    return response.json()


async def complete(api: httpx.AsyncClient, sent: dict[str, Any], **body: Any) -> httpx.Response:
    return await api.post(f"/v1/executions/{sent['execution_id']}/complete", json=body,
                          headers={"authorization": f"Bearer {sent['callback']['token']}"})


async def attempts(api: httpx.AsyncClient, execution_id: str) -> list[dict[str, Any]]:
    response = await api.get(f"/v1/executions/{execution_id}/attempts")
    assert response.status_code == 200, response.text
    return response.json()["items"]


async def events(api: httpx.AsyncClient, execution_id: str) -> list[dict[str, Any]]:
    response = await api.get(f"/v1/executions/{execution_id}/events", params={"limit": 500})
    assert response.status_code == 200, response.text
    assert response.json()["next_cursor"] is None
    return response.json()["items"]


def node_of(api: httpx.AsyncClient) -> str:
    return api.server.app.state.node_id  # type: ignore[attr-defined]


def at(text: str) -> datetime:
    return datetime.fromisoformat(text)


def assert_timed(attempt: dict[str, Any]) -> None:
    """ended_at after started_at, duration_ms the time between them (rounded to the millisecond)."""
    started, ended = at(attempt["started_at"]), at(attempt["ended_at"])
    assert ended >= started
    assert abs(attempt["duration_ms"] - (ended - started).total_seconds() * 1000) <= 1


async def until(check, timeout: float = 10.0) -> Any:
    for _ in range(int(timeout / 0.02)):
        found = await check()
        if found:
            return found
        await asyncio.sleep(0.02)
    raise AssertionError("condition not met in time")


async def test_two_failures_then_a_success_are_three_attempts(api, handler):
    await register(api, "flaky", handler.route("/flaky", failing_then_ok(2)))
    job = await enqueue(api, handler="flaky")
    await wait_for_state(api, job["id"], "SUCCEEDED")

    history = await attempts(api, job["id"])
    assert [(a["attempt"], a["state"], a["http_status"]) for a in history] == [
        (0, "FAILED", 500), (1, "FAILED", 500), (2, "SUCCEEDED", 200)]
    assert {a["node"] for a in history} == {node_of(api)}
    for a, sent in zip(history, handler.received, strict=True):
        assert at(a["started_at"]) == at(sent["started_at"])  # the claim's start, as dispatched
        assert_timed(a)
    assert [(a["error_type"], a["error"]) for a in history] == [
        ("http_status", "HTTP 500 Internal Server Error: boom 1"),
        ("http_status", "HTTP 500 Internal Server Error: boom 2"),
        (None, None)]
    assert at(history[0]["ended_at"]) <= at(history[1]["started_at"])

    trail = await events(api, job["id"])
    assert [e["type"] for e in trail] == ["execution.failed", "execution.failed", "execution.succeeded"]
    assert [e["data"]["new_state"] for e in trail] == ["FAILED", "FAILED", "SUCCEEDED"]
    assert [e["data"]["attempt"] for e in trail] == [0, 1, 2]
    assert all("retry_at" in e["data"] for e in trail[:2]) and "retry_at" not in trail[2]["data"]
    assert not {"payload", "result", "parameters", "error", "last_error"} & set(trail[0]["data"])
    assert [e["id"] for e in trail] == sorted(e["id"] for e in trail)


async def test_a_202_then_a_callback_success_records_no_http_status(api, handler):
    """The attempt's outcome came by callback, not in a reply: its http_status is null. The 202 only
    handed the attempt over; it is kept in memory for the dispatcher, never written."""
    await register(api, "accepts", handler.route("/accepts", status(202)))
    job = await enqueue(api, handler="accepts")
    await handler.wait_for(1)
    [in_flight] = await until(lambda: attempts(api, job["id"]))
    assert (in_flight["state"], in_flight["ended_at"], in_flight["duration_ms"]) == ("PROCESSING", None, None)
    assert in_flight["node"] == node_of(api) and in_flight["http_status"] is None

    done = await complete(api, handler.received[0], outcome="succeeded", result={"rows": 3})
    assert done.json()["state"] == "SUCCEEDED"
    [attempt] = await attempts(api, job["id"])
    assert (attempt["state"], attempt["http_status"], attempt["node"]) == ("SUCCEEDED", None, node_of(api))
    assert attempt["started_at"] == in_flight["started_at"]
    assert_timed(attempt)
    assert [e["type"] for e in await events(api, job["id"])] == ["execution.succeeded"]


async def test_an_abandoned_attempt_that_succeeds_late_is_succeeded(api, handler):
    async def hang(_: web.Request, __: dict[str, Any]) -> web.StreamResponse:
        await asyncio.sleep(3)
        return web.json_response({"result": "too late"})

    await register(api, "hangs", handler.route("/hangs", hang))
    job = await enqueue(api, handler="hangs", timeout_seconds=0.3, max_attempts=1)
    await wait_for_state(api, job["id"], "DEAD_LETTER")
    [abandoned] = await attempts(api, job["id"])
    assert (abandoned["state"], abandoned["error_type"], abandoned["http_status"]) == (
        "ABANDONED", "abandoned_deadline", None)
    assert abandoned["error"].startswith("no reply by the attempt's deadline")
    assert abandoned["duration_ms"] >= 300

    late = await complete(api, handler.received[0], outcome="succeeded", result={"late": True})
    assert late.json()["state"] == "SUCCEEDED"
    [attempt] = await attempts(api, job["id"])  # the last outcome of the attempt wins
    assert (attempt["attempt"], attempt["state"], attempt["error_type"], attempt["error"]) == (
        0, "SUCCEEDED", None, None)
    assert attempt["started_at"] == abandoned["started_at"] and at(attempt["ended_at"]) > at(abandoned["ended_at"])
    assert [e["type"] for e in await events(api, job["id"])] == [
        "execution.abandoned", "execution.dead_lettered", "execution.succeeded"]


async def test_cancelling_a_processing_execution_ends_its_attempt_cancelled(api, handler):
    await register(api, "accepts", handler.route("/accepts", status(202)))
    job = await enqueue(api, handler="accepts")
    await handler.wait_for(1)
    await wait_for_state(api, job["id"], "PROCESSING")
    assert (await api.post(f"/v1/executions/{job['id']}/cancel")).json()["state"] == "CANCELLED"

    [attempt] = await attempts(api, job["id"])
    assert (attempt["state"], attempt["node"], attempt["http_status"], attempt["error_type"]) == (
        "CANCELLED", node_of(api), None, None)
    assert_timed(attempt)
    [cancelled] = await events(api, job["id"])
    assert cancelled["type"] == "execution.cancelled" and cancelled["data"]["new_state"] == "CANCELLED"
    # The handler's late answer changes nothing: a user's cancel is never overridden.
    assert (await complete(api, handler.received[0], outcome="succeeded")).json()["state"] == "CANCELLED"
    assert [a["state"] for a in await attempts(api, job["id"])] == ["CANCELLED"]


async def test_a_spent_job_and_its_manual_retry(api, handler):
    behaviour = {"reply": status(500, body={"error": "x" * 5000})}

    async def reply(request: web.Request, job: dict[str, Any]) -> web.StreamResponse:
        return await behaviour["reply"](request, job)

    await register(api, "broken", handler.route("/broken", reply))
    job = await enqueue(api, handler="broken", max_attempts=3)
    await wait_for_state(api, job["id"], "DEAD_LETTER")
    history = await attempts(api, job["id"])
    assert [(a["attempt"], a["state"], a["http_status"]) for a in history] == [
        (0, "FAILED", 500), (1, "FAILED", 500), (2, "FAILED", 500)]  # never DEAD_LETTER: that is not an attempt
    for a in history:
        assert a["error"].startswith("HTTP 500 Internal Server Error: ") and "…[truncated " in a["error"]
        assert len(a["error"]) <= 2000 + len("…[truncated 9999 chars]")
    trail = await events(api, job["id"])
    assert [e["type"] for e in trail] == ["execution.failed"] * 3 + ["execution.dead_lettered"]
    assert ["retry_at" in e["data"] for e in trail] == [True, True, False, False]
    assert trail[-1]["data"]["new_state"] == "DEAD_LETTER" and trail[-1]["data"]["attempt"] == 2

    behaviour["reply"] = status(200, body={"result": "fixed"})
    retried = await api.post(f"/v1/executions/{job['id']}/retry")
    assert retried.status_code == 200 and retried.json()["attempt"] == 3
    await wait_for_state(api, job["id"], "SUCCEEDED")
    assert [(a["attempt"], a["state"], a["http_status"]) for a in await attempts(api, job["id"])][-2:] == [
        (2, "FAILED", 500), (3, "SUCCEEDED", 200)]
    trail = await events(api, job["id"])
    assert [e["type"] for e in trail][-3:] == ["execution.dead_lettered", "execution.retried", "execution.succeeded"]
    assert (trail[-2]["data"]["new_state"], trail[-2]["data"]["attempt"]) == ("ENQUEUED", 3)


async def test_the_attempt_in_flight_while_the_handler_hangs(api, handler):
    release = asyncio.Event()

    async def hang(_: web.Request, __: dict[str, Any]) -> web.StreamResponse:
        await asyncio.wait_for(release.wait(), timeout=20)
        return web.json_response({"result": "done"})

    await register(api, "hangs", handler.route("/hangs", hang))
    job = await enqueue(api, handler="hangs", timeout_seconds=60)
    await handler.wait_for(1)
    [in_flight] = await attempts(api, job["id"])
    assert in_flight == {"attempt": 0, "state": "PROCESSING", "started_at": in_flight["started_at"], "ended_at": None,
                         "duration_ms": None, "node": node_of(api), "error_type": None, "error": None,
                         "http_status": None}
    assert at(in_flight["started_at"]) == at(handler.received[0]["started_at"])
    assert await events(api, job["id"]) == []  # the claim is no event of the feed

    release.set()
    await wait_for_state(api, job["id"], "SUCCEEDED")
    [done] = await attempts(api, job["id"])
    assert (done["state"], done["http_status"], done["started_at"]) == ("SUCCEEDED", 200, in_flight["started_at"])


async def test_an_attempts_error_text_is_truncated_to_2000_characters(api, handler):
    await register(api, "accepts", handler.route("/accepts", status(202)))
    job = await enqueue(api, handler="accepts", max_attempts=1)
    await handler.wait_for(1)
    message = "".join(chr(ord("a") + n % 26) for n in range(5000))
    failed = await complete(api, handler.received[0], outcome="failed", retryable=False,
                            error={"message": message, "type": "validation"})
    assert failed.json()["state"] == "DEAD_LETTER"
    [attempt] = await attempts(api, job["id"])
    assert attempt["error"] == message[:2000] + "…[truncated 3000 chars]"
    assert (attempt["state"], attempt["error_type"], attempt["http_status"]) == ("FAILED", "validation", None)


def attempt_lines(records: list[logging.LogRecord], execution_id: str) -> list[logging.LogRecord]:
    return [r for r in records if r.name == OUTCOMES and getattr(r, "jobwire", {}).get("execution_id") == execution_id]


async def test_a_warning_line_per_failed_and_dead_lettered_attempt_and_none_for_a_success(api, handler, caplog):
    caplog.set_level(logging.DEBUG, logger=OUTCOMES)
    await register(api, "broken", handler.route("/broken", status(503, body={"error": "down"})))
    await register(api, "echo", handler.route("/echo", status(200, body={"result": 1})))
    spent = await enqueue(api, handler="broken", max_attempts=2, queue="q1")
    fine = await enqueue(api, handler="echo")
    await wait_for_state(api, spent["id"], "DEAD_LETTER")
    await wait_for_state(api, fine["id"], "SUCCEEDED")
    history = await attempts(api, spent["id"])

    lines = attempt_lines(caplog.records, spent["id"])
    assert [r.levelno for r in lines] == [logging.WARNING, logging.WARNING]
    assert "failed (http_status), retrying" in lines[0].getMessage()
    assert "failed (http_status), dead-lettered" in lines[1].getMessage()
    for n, (line, attempt) in enumerate(zip(lines, history, strict=True)):
        fields = line.jobwire  # type: ignore[attr-defined]
        assert {k: fields[k] for k in ("execution_id", "attempt", "handler", "queue", "node", "error_type")} == {
            "execution_id": spent["id"], "attempt": n, "handler": "broken", "queue": "q1", "node": node_of(api),
            "error_type": "http_status"}
        assert fields["duration_ms"] == attempt["duration_ms"]
    assert [line.jobwire["state"] for line in lines] == ["ENQUEUED", "DEAD_LETTER"]  # type: ignore[attr-defined]

    [success] = attempt_lines(caplog.records, fine["id"])
    assert success.levelno == logging.DEBUG and "succeeded" in success.getMessage()
    assert success.jobwire["node"] == node_of(api) and "error_type" not in success.jobwire  # type: ignore[attr-defined]
    assert not [r for r in attempt_lines(caplog.records, fine["id"]) if r.levelno >= logging.WARNING]


async def test_a_success_writes_no_line_at_warning_and_a_callback_failure_one(api, handler, caplog):
    caplog.set_level(logging.WARNING, logger=OUTCOMES)
    await register(api, "echo", handler.route("/echo", status(200, body={"result": 1})))
    await register(api, "accepts", handler.route("/accepts", status(202)))
    fine = await enqueue(api, handler="echo")
    held = await enqueue(api, handler="accepts", max_attempts=1)
    await wait_for_state(api, fine["id"], "SUCCEEDED")
    await handler.wait_for(2)
    sent = next(r for r in handler.received if r["execution_id"] == held["id"])
    await complete(api, sent, outcome="failed", error={"message": "bad input", "type": "validation"})
    again = await complete(api, sent, outcome="failed", error={"message": "bad input", "type": "validation"})
    assert again.json()["state"] == "DEAD_LETTER"  # a no-op: it logs nothing
    assert attempt_lines(caplog.records, fine["id"]) == []
    [line] = [r for r in caplog.records if getattr(r, "jobwire", {}).get("execution_id") == held["id"]]
    assert line.levelno == logging.WARNING and line.name == "app.services.callbacks"
    assert line.jobwire["error_type"] == "validation" and line.jobwire["node"] == node_of(api)  # type: ignore


async def test_a_succeeded_execution_shows_no_error_of_an_earlier_attempt(api, handler):
    """Rows tell the truth: after two failures and a success the execution has no error; each
    attempt keeps its own in the history."""
    await register(api, "flaky", handler.route("/flaky", failing_then_ok(2)))
    job = await enqueue(api, handler="flaky")
    done = await wait_for_state(api, job["id"], "SUCCEEDED")
    assert (done["last_error"], done["error_type"]) == (None, None)
    assert [(a["state"], a["error_type"]) for a in await attempts(api, job["id"])] == [
        ("FAILED", "http_status"), ("FAILED", "http_status"), ("SUCCEEDED", None)]
    assert (await api.get("/v1/executions", params={"job_id": done["job_id"]})).json()["items"][0]["last_error"] is None


async def test_a_callback_success_after_failed_attempts_clears_their_error(api, handler):
    calls = {"n": 0}

    async def fail_then_accept(_: web.Request, __: dict[str, Any]) -> web.StreamResponse:
        calls["n"] += 1
        return web.Response(status=503, text="warming up") if calls["n"] == 1 else web.Response(status=202)

    await register(api, "slow", handler.route("/slow", fail_then_accept))
    job = await enqueue(api, handler="slow")
    await handler.wait_for(2)
    held = await wait_for_state(api, job["id"], "PROCESSING")
    assert held["error_type"] == "http_status"  # while the next attempt runs, the last one's error shows
    done = await complete(api, handler.received[1], outcome="succeeded", result=1)
    assert (done.json()["state"], done.json()["last_error"], done.json()["error_type"]) == ("SUCCEEDED", None, None)
    [first, second] = await attempts(api, job["id"])
    assert (first["error_type"], first["error"]) == ("http_status", "HTTP 503 Service Unavailable: warming up")
    assert (second["state"], second["error"]) == ("SUCCEEDED", None)


async def test_a_late_success_over_a_dead_letter_shows_no_abandonment(api, handler):
    async def hang(_: web.Request, __: dict[str, Any]) -> web.StreamResponse:
        await asyncio.sleep(3)
        return web.json_response({"result": "too late"})

    await register(api, "hangs", handler.route("/hangs", hang))
    job = await enqueue(api, handler="hangs", timeout_seconds=0.3, max_attempts=1)
    dead = await wait_for_state(api, job["id"], "DEAD_LETTER")
    assert dead["error_type"] == "abandoned_deadline" and dead["last_error"]
    late = (await complete(api, handler.received[0], outcome="succeeded", result={"late": True})).json()
    assert (late["state"], late["last_error"], late["error_type"]) == ("SUCCEEDED", None, None)
    shown = (await api.get(f"/v1/executions/{job['id']}")).json()
    assert (shown["last_error"], shown["error_type"]) == (None, None)
    [abandoned, dead_lettered, succeeded] = await events(api, job["id"])
    assert abandoned["data"]["error_type"] == "abandoned_deadline"  # the trail keeps what happened
    assert succeeded["data"]["error_type"] is None
