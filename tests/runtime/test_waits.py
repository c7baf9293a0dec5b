"""Durable waits and signals against a real node and a real handler recording every call: a
handler's `suspend` releases its slot and the execution waits (WAITING, the same attempt), then is
dispatched again as a new message (`webhook-id: <id>.r<n>`, `jobwire-resume: n`) with `resume` and
the steps it recorded; a signal sent before the wait is kept and consumed by it, one sent during the
wait wakes it; a timeout resumes it anyway."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
from aiohttp import web

from tests.conftest import HandlerServer, register, wait_for_state


def resumed(job: dict[str, Any]) -> dict[str, Any] | None:
    return job.get("resume")


async def test_a_suspended_execution_sleeps_holding_no_slot_then_resumes_with_its_steps(
        api: httpx.AsyncClient, handler: HandlerServer) -> None:
    async def sleepy(_: web.Request, job: dict[str, Any]) -> web.StreamResponse:
        if resumed(job) is None:
            return web.json_response({"suspend": {"seconds": 1, "steps": {"fetched": {"rows": 3}}}})
        return web.json_response({"result": {"steps": job["steps"], "resume": job["resume"]}})

    await register(api, "sleepy", handler.route("/sleepy", sleepy), max_concurrency=1)
    execution_id = (await api.post("/v1/jobs", json={"handler": "sleepy"})).json()["id"]
    another = (await api.post("/v1/jobs", json={"handler": "sleepy"})).json()["id"]
    # One call at a time (max_concurrency 1), yet both wait at once: a waiting job holds no slot.
    await wait_for_state(api, execution_id, "WAITING")
    await wait_for_state(api, another, "WAITING")
    blockers = (await api.get(f"/v1/executions/{execution_id}/blockers")).json()
    assert blockers["state"] == "WAITING" and blockers["items"][0]["reason"] == "suspended"
    assert blockers["items"][0]["until"] is not None and blockers["items"][0]["signals"] == []
    done = await wait_for_state(api, execution_id, "SUCCEEDED", timeout=15)
    assert done["attempt"] == 0  # a resumption spends no attempt
    assert done["result"] == {"steps": {"fetched": {"rows": 3}},
                              "resume": {"n": 1, "reason": "timer", "signals": [], "children": {}}}
    first, second = [h for h, r in zip(handler.headers, handler.received, strict=True)
                     if r["execution_id"] == execution_id]
    assert first["webhook-id"] == execution_id and "jobwire-resume" not in first
    assert (second["webhook-id"], second["jobwire-resume"]) == (f"{execution_id}.r1", "1")
    await wait_for_state(api, another, "SUCCEEDED", timeout=15)


async def test_a_signal_sent_before_the_wait_is_kept_and_consumed_by_it_once(
        api: httpx.AsyncClient, handler: HandlerServer) -> None:
    release = asyncio.Event()

    async def approval(_: web.Request, job: dict[str, Any]) -> web.StreamResponse:
        if resumed(job) is None:
            await release.wait()
            return web.json_response({"suspend": {"signals": ["approved"], "timeout_seconds": 60}})
        return web.json_response({"result": job["resume"]})

    await register(api, "approval", handler.route("/approval", approval))
    execution_id = (await api.post("/v1/jobs", json={"handler": "approval"})).json()["id"]
    await wait_for_state(api, execution_id, "PROCESSING")
    sent = await api.post(f"/v1/executions/{execution_id}/signals/approved", json={"payload": {"by": "ana"}})
    assert sent.status_code == 202 and sent.json()["woke"] is False
    release.set()
    done = await wait_for_state(api, execution_id, "SUCCEEDED", timeout=15)
    assert done["result"]["reason"] == "signal"
    assert [(s["name"], s["payload"]) for s in done["result"]["signals"]] == [("approved", {"by": "ana"})]
    assert done["result"]["signals"][0]["sent_at"].endswith("Z")  # as the dispatch writes its times
    listed = (await api.get(f"/v1/executions/{execution_id}/signals")).json()["items"]
    assert [(s["id"], s["consumed_at"] is not None) for s in listed] == [(sent.json()["id"], True)]
    assert (await api.post(f"/v1/executions/{execution_id}/signals/approved")).status_code == 409


async def test_a_signal_sent_during_the_wait_wakes_it_and_a_timeout_resumes_one_nobody_signals(
        api: httpx.AsyncClient, handler: HandlerServer) -> None:
    async def approval(_: web.Request, job: dict[str, Any]) -> web.StreamResponse:
        if resumed(job) is None:
            timeout = job["payload"]["timeout"]
            return web.json_response({"suspend": {"signals": ["approved", "rejected"], "timeout_seconds": timeout}})
        return web.json_response({"result": job["resume"]["reason"]})

    await register(api, "approval", handler.route("/approval", approval))
    waiting = (await api.post("/v1/jobs", json={"handler": "approval", "payload": {"timeout": 600}})).json()["id"]
    timing_out = (await api.post("/v1/jobs", json={"handler": "approval", "payload": {"timeout": 1}})).json()["id"]
    await wait_for_state(api, waiting, "WAITING")
    other = await api.post(f"/v1/executions/{waiting}/signals/unrelated")
    assert other.json()["woke"] is False
    assert (await api.get(f"/v1/executions/{waiting}")).json()["state"] == "WAITING"
    sent = await api.post(f"/v1/executions/{waiting}/signals/rejected", json={"payload": "no"})
    assert sent.status_code == 202 and sent.json()["woke"] is True
    assert (await wait_for_state(api, waiting, "SUCCEEDED"))["result"] == "signal"
    assert (await wait_for_state(api, timing_out, "SUCCEEDED", timeout=15))["result"] == "timeout"
    listed = (await api.get(f"/v1/executions/{waiting}/signals")).json()["items"]
    assert [(s["name"], s["consumed_at"] is None) for s in listed] == [("unrelated", True), ("rejected", False)]


async def test_an_invalid_suspend_fails_the_attempt_and_a_callback_can_suspend_too(
        api: httpx.AsyncClient, handler: HandlerServer) -> None:
    async def bad(_: web.Request, job: dict[str, Any]) -> web.StreamResponse:
        return web.json_response({"suspend": {"until": "2999-01-01T00:00:00Z"}})

    async def later(request: web.Request, job: dict[str, Any]) -> web.StreamResponse:
        if resumed(job) is None:
            async def report() -> None:
                async with httpx.AsyncClient() as client:
                    await client.post(job["callback"]["url"] + "/complete",
                                      headers={"Authorization": f"Bearer {job['callback']['token']}"},
                                      json={"outcome": "suspended", "suspend": {"seconds": 0.5}})
            asyncio.get_running_loop().call_later(0.1, lambda: asyncio.ensure_future(report()))
            return web.Response(status=202)
        return web.json_response({"result": job["resume"]["reason"]})

    await register(api, "bad", handler.route("/bad", bad))
    await register(api, "later", handler.route("/later", later))
    failed = (await api.post("/v1/jobs", json={"handler": "bad", "max_attempts": 1})).json()["id"]
    shown = await wait_for_state(api, failed, "DEAD_LETTER")
    assert "365 days" in shown["last_error"]
    via_callback = (await api.post("/v1/jobs", json={"handler": "later"})).json()["id"]
    assert (await wait_for_state(api, via_callback, "SUCCEEDED", timeout=15))["result"] == "timer"
