"""Handler batching against a real handler on loopback: a batching handler's due jobs come in one
signed POST of `{"executions": [...]}`, and each job's outcome in the answer's `outcomes` is
recorded as its own attempt's (retries, dead letters, callbacks after a 202)."""

from __future__ import annotations

import asyncio
import time
from datetime import datetime
from typing import Any

import httpx
from aiohttp import web
from standardwebhooks.webhooks import Webhook

from tests.conftest import register, wait_for_state


async def enqueue_all(api: httpx.AsyncClient, *jobs: dict[str, Any]) -> list[dict[str, Any]]:
    """One batch enqueue: one transaction, so the next claim finds them due together."""
    response = await api.post("/v1/jobs/batch", json={"jobs": list(jobs)})
    assert response.status_code == 201, response.text
    return response.json()["items"]


def answer(outcomes_of: Any, status: int = 200):
    """A batch handler answering {"outcomes": outcomes_of(executions)}."""
    async def reply(_: web.Request, body: dict[str, Any]) -> web.StreamResponse:
        return web.json_response({"outcomes": outcomes_of(body["executions"])}, status=status)
    return reply


def every_one_succeeds(executions: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{"execution_id": e["execution_id"], "outcome": "succeeded", "result": e["payload"]} for e in executions]


async def test_a_batching_handler_gets_due_jobs_in_one_signed_post_and_each_outcome_is_its_jobs(api, handler):
    def outcomes(executions: list[dict[str, Any]]) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = [{"execution_id": "00000000-0000-0000-0000-000000000000", "outcome": "succeeded"}]
        for e in executions:
            kind = e["payload"]["kind"]
            if kind == "ok":
                out.append({"execution_id": e["execution_id"], "outcome": "succeeded", "result": {"n": e["attempt"]}})
            elif kind == "flaky" and e["attempt"] == 0:
                out.append({"execution_id": e["execution_id"], "outcome": "failed",
                            "error": {"type": "not_yet", "message": "try again"}})
            elif kind == "flaky":
                out.append({"execution_id": e["execution_id"], "outcome": "succeeded", "result": "second time"})
            elif kind == "fatal":
                out.append({"execution_id": e["execution_id"], "outcome": "failed", "error": "bad input",
                            "retryable": False})
        return out  # "missing" is left out

    secret = (await register(api, "bulk", handler.route("/bulk", answer(outcomes)),
                             batch={"max_size": 10}))["secret"]
    ok, flaky, missing, fatal = await enqueue_all(
        api, {"handler": "bulk", "payload": {"kind": "ok"}},
        {"handler": "bulk", "payload": {"kind": "flaky"}, "max_attempts": 2},
        {"handler": "bulk", "payload": {"kind": "missing"}, "max_attempts": 1},
        {"handler": "bulk", "payload": {"kind": "fatal"}, "max_attempts": 3})

    done = await wait_for_state(api, ok["id"], "SUCCEEDED")
    assert done["result"] == {"n": 0} and done["attempt"] == 0
    retried = await wait_for_state(api, flaky["id"], "SUCCEEDED")
    assert retried["attempt"] == 1 and retried["result"] == "second time"
    first = (await api.get(f"/v1/executions/{flaky['id']}/attempts")).json()["items"][0]
    assert (first["error_type"], first["error"]) == ("not_yet", "try again")
    lost = await wait_for_state(api, missing["id"], "DEAD_LETTER")
    assert lost["error_type"] == "handler_failed" and "no outcome" in lost["last_error"]
    refused = await wait_for_state(api, fatal["id"], "DEAD_LETTER")
    assert refused["attempt"] == 0 and refused["last_error"] == "bad input"

    call = handler.received[0]
    assert sorted(e["execution_id"] for e in call["executions"]) == sorted(
        j["id"] for j in (ok, flaky, missing, fatal))
    one = next(e for e in call["executions"] if e["execution_id"] == ok["id"])
    assert one["attempt"] == 0 and one["payload"] == {"kind": "ok"}
    assert one["callback"]["url"].endswith(f"/v1/executions/{ok['id']}") and one["callback"]["token"]
    headers = {k.lower(): v for k, v in handler.headers[0].items()}
    assert headers["webhook-id"] == f"{call['executions'][0]['execution_id']}+4"
    Webhook(secret).verify(handler.bodies[0], headers)
    # The retry of the flaky job is a call of its own (the others had ended).
    assert [len(c["executions"]) for c in handler.received] == [4, 1]


async def test_a_call_holds_at_most_max_size_jobs(api, handler):
    await register(api, "small", handler.route("/small", answer(every_one_succeeds)), batch={"max_size": 2})
    jobs = await enqueue_all(api, *({"handler": "small", "payload": i} for i in range(5)))
    for job in jobs:
        assert (await wait_for_state(api, job["id"], "SUCCEEDED"))["result"] == job["payload"]
    assert sorted(len(c["executions"]) for c in handler.received) == [1, 2, 2]


async def test_a_failing_answer_fails_every_job_of_the_call(api, handler):
    async def fail(_: web.Request, __: dict[str, Any]) -> web.StreamResponse:
        return web.json_response({"error": {"type": "overloaded", "message": "later"}}, status=500)

    await register(api, "down", handler.route("/down", fail), batch={"max_size": 10})
    jobs = await enqueue_all(api, *({"handler": "down", "max_attempts": 1} for _ in range(3)))
    for job in jobs:
        dead = await wait_for_state(api, job["id"], "DEAD_LETTER")
        assert (dead["error_type"], dead["last_error"]) == ("overloaded", "later")
    assert [len(c["executions"]) for c in handler.received] == [3]


async def test_a_2xx_without_outcomes_fails_every_job(api, handler):
    async def empty(_: web.Request, __: dict[str, Any]) -> web.StreamResponse:
        return web.json_response({"result": 1})

    await register(api, "confused", handler.route("/confused", empty), batch={"max_size": 10})
    jobs = await enqueue_all(api, *({"handler": "confused", "max_attempts": 1} for _ in range(2)))
    for job in jobs:
        dead = await wait_for_state(api, job["id"], "DEAD_LETTER")
        assert "outcomes" in dead["last_error"]


async def test_a_202_hands_every_job_to_its_callbacks(api, handler):
    async def accept(_: web.Request, __: dict[str, Any]) -> web.StreamResponse:
        return web.Response(status=202)

    await register(api, "later", handler.route("/later", accept), batch={"max_size": 10})
    jobs = await enqueue_all(api, *({"handler": "later", "payload": i} for i in range(3)))
    await handler.wait_for(1)
    for sent in handler.received[0]["executions"]:
        held = await wait_for_state(api, sent["execution_id"], "PROCESSING")
        for _ in range(100):  # the node lets go once the 202 is recorded
            if held["locked_by"] is None:
                break
            await asyncio.sleep(0.02)
            held = (await api.get(f"/v1/executions/{sent['execution_id']}")).json()
        assert held["locked_by"] is None
        done = await api.post(f"{sent['callback']['url']}/complete",
                              json={"outcome": "succeeded", "result": sent["payload"] * 10},
                              headers={"authorization": f"Bearer {sent['callback']['token']}"})
        assert done.status_code == 200 and done.json()["state"] == "SUCCEEDED"
    for job in jobs:
        assert (await wait_for_state(api, job["id"], "SUCCEEDED"))["result"] == job["payload"] * 10
    assert len(handler.received) == 1


async def test_max_concurrency_counts_jobs_not_calls(api, handler):
    in_flight = {"now": 0, "most": 0}

    async def slow(_: web.Request, body: dict[str, Any]) -> web.StreamResponse:
        in_flight["now"] += len(body["executions"])
        in_flight["most"] = max(in_flight["most"], in_flight["now"])
        await asyncio.sleep(0.1)
        in_flight["now"] -= len(body["executions"])
        return web.json_response({"outcomes": every_one_succeeds(body["executions"])})

    await register(api, "narrow", handler.route("/narrow", slow), max_concurrency=2, batch={"max_size": 10})
    jobs = await enqueue_all(api, *({"handler": "narrow", "payload": i} for i in range(5)))
    for job in jobs:
        await wait_for_state(api, job["id"], "SUCCEEDED")
    assert in_flight["most"] == 2
    assert all(len(c["executions"]) <= 2 for c in handler.received)


async def test_a_group_waits_up_to_max_wait_ms_for_jobs_of_later_claims(api, handler):
    await register(api, "patient", handler.route("/patient", answer(every_one_succeeds)),
                   batch={"max_size": 3, "max_wait_ms": 1000})
    jobs = []
    for i in range(3):  # three enqueues, three claims
        response = await api.post("/v1/jobs", json={"handler": "patient", "payload": i})
        assert response.status_code == 201
        jobs.append(response.json())
        await asyncio.sleep(0.05)
    for job in jobs:
        await wait_for_state(api, job["id"], "SUCCEEDED")
    assert [len(c["executions"]) for c in handler.received] == [3]  # full: sent before its wait was over

    began = asyncio.get_running_loop().time()
    alone = (await api.post("/v1/jobs", json={"handler": "patient", "payload": 9})).json()
    await wait_for_state(api, alone["id"], "SUCCEEDED")
    assert asyncio.get_running_loop().time() - began >= 0.9  # waited for company that never came
    assert [len(c["executions"]) for c in handler.received] == [3, 1]


async def test_a_failing_call_counts_once_toward_the_circuit(api, handler):
    async def fail(_: web.Request, __: dict[str, Any]) -> web.StreamResponse:
        return web.Response(status=503, text="down")

    await register(api, "fragile", handler.route("/fragile", fail), batch={"max_size": 10})
    jobs = await enqueue_all(api, *({"handler": "fragile", "max_attempts": 1} for _ in range(6)))
    for job in jobs:
        await wait_for_state(api, job["id"], "DEAD_LETTER")
    assert [len(c["executions"]) for c in handler.received] == [6]
    circuit = (await api.get("/v1/handlers/fragile")).json()["circuit"]
    assert circuit["state"] == "closed" and circuit["failures"] == 1  # one call, not six jobs


async def test_an_adaptive_handlers_429_puts_every_job_of_the_call_back_and_halves_the_limit_once(api, handler):
    calls = {"n": 0}

    async def busy_once(_: web.Request, body: dict[str, Any]) -> web.StreamResponse:
        calls["n"] += 1
        if calls["n"] == 1:
            return web.Response(status=429)
        return web.json_response({"outcomes": every_one_succeeds(body["executions"])})

    await register(api, "elastic", handler.route("/elastic", busy_once), max_concurrency=8, adaptive=True,
                   batch={"max_size": 10})
    jobs = await enqueue_all(api, *({"handler": "elastic", "payload": i} for i in range(4)))
    for job in jobs:
        done = await wait_for_state(api, job["id"], "SUCCEEDED")
        assert done["attempt"] == 0  # a refusal spends no attempt
    sizes = [len(c["executions"]) for c in handler.received]
    assert sizes[0] == 4 and all(size <= 2 for size in sizes[1:])  # the limit started at 4, then halved once
    assert (await api.get("/v1/handlers/elastic")).json()["adaptive"]["limit"] == 2


async def test_a_call_open_at_its_soonest_deadline_is_abandoned_and_no_job_waits_past_half_its_time(api, handler):
    called_at: list[float] = []

    async def hang(_: web.Request, __: dict[str, Any]) -> web.StreamResponse:
        called_at.append(time.time())
        await asyncio.sleep(5)
        return web.json_response({"outcomes": []})

    await register(api, "hangs", handler.route("/hangs", hang), batch={"max_size": 10, "max_wait_ms": 1000})
    [job] = await enqueue_all(api, {"handler": "hangs", "timeout_seconds": 0.6, "max_attempts": 1})
    await handler.wait_for(1)
    # Sent at most half its 0.6 s after its claim (the row's started_at, the database's clock on
    # this machine), not after the group's 1 s wait; the margin is for a loaded machine.
    started = (await api.get(f"/v1/executions/{job['id']}")).json()["started_at"]
    assert called_at[0] - datetime.fromisoformat(started).timestamp() < 0.9
    dead = await wait_for_state(api, job["id"], "DEAD_LETTER")
    assert dead["error_type"] == "abandoned_deadline"
    # Abandoned at its deadline, not when the call's reply came (5 s).
    assert datetime.fromisoformat(dead["completed_at"]).timestamp() - called_at[0] < 4.0


async def test_stopping_the_node_sends_a_waiting_group_at_once(jobwire, handler):
    server = await jobwire(shutdown_grace=5.0)
    async with httpx.AsyncClient(base_url=server.url, timeout=10) as api:
        await register(api, "slowpoke", handler.route("/slowpoke", answer(every_one_succeeds)),
                       batch={"max_size": 10, "max_wait_ms": 1000})
        [job] = await enqueue_all(api, {"handler": "slowpoke", "payload": 1})
        await wait_for_state(api, job["id"], "PROCESSING")
        began = asyncio.get_running_loop().time()
        await server.stop()
        assert asyncio.get_running_loop().time() - began < 0.9
        assert [len(c["executions"]) for c in handler.received] == [1]
    restarted = await jobwire()
    async with httpx.AsyncClient(base_url=restarted.url, timeout=10) as api:
        assert (await wait_for_state(api, job["id"], "SUCCEEDED"))["result"] == 1


async def test_shutdown_abandons_every_job_of_a_call_still_open_after_the_grace(jobwire, handler):
    server = await jobwire(shutdown_grace=0.3)
    release = asyncio.Event()

    async def hang(_: web.Request, __: dict[str, Any]) -> web.StreamResponse:
        try:
            await asyncio.wait_for(release.wait(), 10)
        except TimeoutError:
            pass
        return web.json_response({"outcomes": []})

    try:
        async with httpx.AsyncClient(base_url=server.url, timeout=10) as api:
            await register(api, "hangs", handler.route("/hangs", hang), batch={"max_size": 10})
            jobs = await enqueue_all(api, *({"handler": "hangs", "max_attempts": 3} for _ in range(3)))
            await handler.wait_for(1)
            await server.stop()
    finally:
        release.set()
    restarted = await jobwire(poll_interval=30.0)  # serves the API; its claims would wait for a NOTIFY
    async with httpx.AsyncClient(base_url=restarted.url, timeout=10) as api:
        for job in jobs:
            attempts = (await api.get(f"/v1/executions/{job['id']}/attempts")).json()["items"]
            assert attempts[0]["error_type"] == "abandoned_shutdown"


async def test_a_group_is_sent_at_once_when_the_node_has_no_slot_left_for_more(jobwire, handler):
    server = await jobwire(concurrency=2)
    async with httpx.AsyncClient(base_url=server.url, timeout=10) as api:
        await register(api, "wide", handler.route("/wide", answer(every_one_succeeds)),
                       batch={"max_size": 10, "max_wait_ms": 1000})
        began = asyncio.get_running_loop().time()
        jobs = await enqueue_all(api, *({"handler": "wide", "payload": i} for i in range(2)))
        for job in jobs:
            await wait_for_state(api, job["id"], "SUCCEEDED")
        assert asyncio.get_running_loop().time() - began < 0.8  # not after its 1 s wait
        assert [len(c["executions"]) for c in handler.received] == [2]


async def test_a_rate_limit_counts_jobs_not_calls(api, handler):
    await register(api, "metered", handler.route("/metered", answer(every_one_succeeds)),
                   rate_limit={"limit": 60, "period_seconds": 3600}, batch={"max_size": 10})
    jobs = await enqueue_all(api, *({"handler": "metered", "payload": i} for i in range(5)))
    await handler.wait_for(1)
    await asyncio.sleep(0.5)  # further claims find the rate limit spent (a burst of 60 / 20, then a minute apart)
    assert [len(c["executions"]) for c in handler.received] == [3]
    states = sorted([(await api.get(f"/v1/executions/{j['id']}")).json()["state"] for j in jobs])
    assert states == ["ENQUEUED"] * 2 + ["SUCCEEDED"] * 3


async def test_a_stateful_handlers_jobs_go_one_at_a_time_each_in_a_call_of_its_own(api, handler):
    await register(api, "serial", handler.route("/serial", answer(every_one_succeeds)), stateful=True,
                   batch={"max_size": 10})
    jobs = await enqueue_all(api, *({"handler": "serial", "queue": "ledger", "payload": i} for i in range(3)))
    for job in jobs:
        await wait_for_state(api, job["id"], "SUCCEEDED")
    assert [[e["payload"] for e in c["executions"]] for c in handler.received] == [[0], [1], [2]]


async def test_heartbeats_during_a_batch_call_move_its_deadline(api, handler):
    async def beating(_: web.Request, body: dict[str, Any]) -> web.StreamResponse:
        async with httpx.AsyncClient() as client:
            for _ in range(4):  # 1.2 s in all, past the 0.5 s the jobs were claimed with
                await asyncio.sleep(0.3)
                for e in body["executions"]:
                    beat = await client.post(f"{e['callback']['url']}/heartbeat",
                                             headers={"authorization": f"Bearer {e['callback']['token']}"})
                    assert beat.status_code == 200
        return web.json_response({"outcomes": every_one_succeeds(body["executions"])})

    await register(api, "beats", handler.route("/beats", beating), timeout_seconds=0.5, batch={"max_size": 10})
    jobs = await enqueue_all(api, *({"handler": "beats", "payload": i, "max_attempts": 1} for i in range(2)))
    for job in jobs:
        done = await wait_for_state(api, job["id"], {"SUCCEEDED", "DEAD_LETTER"})
        assert done["state"] == "SUCCEEDED" and done["attempt"] == 0
    assert [len(c["executions"]) for c in handler.received] == [2]
