"""jobwire.handler, the handler toolkit, against a real Jobwire: each handler below is an
`asgi_app` served by a real uvicorn on loopback, registered with PUT /v1/handlers/{name} (whose
answer gives its secret), fed by POST /v1/jobs; outcomes are read back through the API.

Callbacks are counted (or spoiled) with httpx event hooks on the client the app is given: the
requests still go to Jobwire, and Jobwire's answers decide."""

from __future__ import annotations

import asyncio
import inspect
import json
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import httpx
import pytest
import uvicorn
from standardwebhooks.webhooks import Webhook
from starlette.applications import Starlette
from starlette.responses import PlainTextResponse
from starlette.routing import Mount, Route

from jobwire import AsyncJobwireClient, SignalSent
from jobwire.handler import Context, Job, Parent, Permanent, Suspend, asgi_app
from tests.conftest import RunningServer, free_port, register, wait_for_state


class Served:
    """An ASGI app on a real uvicorn on 127.0.0.1 (lifespan on, as in production)."""

    def __init__(self, app: Any, port: int | None = None) -> None:
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="warning",
                                                    lifespan="on", access_log=False))
        self.task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        self.task = asyncio.create_task(self.server.serve())
        for _ in range(300):
            if self.server.started:
                return
            if self.task.done():
                self.task.result()
            await asyncio.sleep(0.02)
        raise RuntimeError("the handler app did not start")

    async def stop(self) -> None:
        """Stops it the way SIGTERM does: lifespan shutdown runs before this returns."""
        if self.task is not None and not self.task.done():
            self.server.should_exit = True
            await self.task


class Callbacks:
    """The toolkit's callbacks as they leave (requests) and as Jobwire answered (responses)."""

    def __init__(self) -> None:
        self.sent: list[tuple[str, Any]] = []  # (callback, JSON body)
        self.answered: list[tuple[str, int]] = []

    @staticmethod
    def name(request: httpx.Request) -> str:
        return request.url.path.rsplit("/", 1)[-1]

    async def on_request(self, request: httpx.Request) -> None:
        self.sent.append((self.name(request), json.loads(request.content) if request.content else None))

    async def on_response(self, response: httpx.Response) -> None:
        self.answered.append((self.name(response.request), response.status_code))

    def bodies(self, callback: str) -> list[Any]:
        return [body for name, body in self.sent if name == callback]


class Toolkit:
    """Deploys handlers written on the toolkit beside a running Jobwire, and enqueues to them."""

    def __init__(self, api: httpx.AsyncClient, stack: AsyncExitStack, server: RunningServer) -> None:
        self.api = api
        self.stack = stack
        self.server = server  # the Jobwire node the handlers call back

    async def register(self, name: str, **registration: Any) -> tuple[int, str]:
        """Registers handler `name` at a free port's URL; (the port, its secret)."""
        port = free_port()
        registered = await register(self.api, name, f"http://127.0.0.1:{port}/{name}", **registration)
        return port, registered["secret"]

    async def serve(self, port: int, handle: Callable[[Job, Context], Awaitable[Any]], secret: Any, *,
                    hooks: Callable[[httpx.Request], Awaitable[None]] | None = None, **options: Any,
                    ) -> tuple[Callbacks, Served]:
        """Serves `asgi_app(handle, secret, **options)` on `port`, its callbacks recorded."""
        seen = Callbacks()
        client = httpx.AsyncClient(timeout=10, event_hooks={"request": [seen.on_request, *([hooks] if hooks else [])],
                                                            "response": [seen.on_response]})
        self.stack.push_async_callback(client.aclose)  # after the app stopped (LIFO)
        served = Served(asgi_app(handle, secret, http_client=client, **options), port)
        await served.start()
        self.stack.push_async_callback(served.stop)
        return seen, served

    async def deploy(self, name: str, handle: Callable[[Job, Context], Awaitable[Any]], *,
                     registration: dict[str, Any] | None = None, secret: str | None = None, **options: Any,
                     ) -> tuple[Callbacks, Served]:
        """Registers `name` and serves `handle` for it with its secret (or with `secret`)."""
        port, registered = await self.register(name, **(registration or {}))
        return await self.serve(port, handle, secret or registered, **options)

    async def enqueue(self, handler: str, payload: Any = None, **fields: Any) -> str:
        response = await self.api.post("/v1/jobs", json={"handler": handler, "payload": payload, **fields})
        assert response.status_code == 201, response.text
        return str(response.json()["id"])

    async def attempts(self, execution_id: str) -> list[dict[str, Any]]:
        response = await self.api.get(f"/v1/executions/{execution_id}/attempts")
        assert response.status_code == 200, response.text
        return list(response.json()["items"])

    async def logs(self, execution_id: str) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = []
        params: dict[str, Any] = {"limit": 500}
        while True:
            page = (await self.api.get(f"/v1/executions/{execution_id}/logs", params=params)).json()
            items += page["items"]
            if not page["next_cursor"]:
                return items
            params["cursor"] = page["next_cursor"]


@pytest.fixture
async def toolkit(jobwire: Callable[..., Awaitable[RunningServer]]) -> AsyncIterator[Toolkit]:
    # Deadline scans every 0.2 s: an attempt that stops heartbeating past its timeout is
    # abandoned within the test, not 30 s later.
    server = await jobwire(scan_interval=0.2)
    async with httpx.AsyncClient(base_url=server.url, timeout=10) as api, AsyncExitStack() as stack:
        yield Toolkit(api, stack, server)


async def eventually(check: Callable[[], Awaitable[bool] | bool], timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not await _value(check()):
        assert time.monotonic() < deadline, "the condition did not come true in time"
        await asyncio.sleep(0.02)


async def _value(result: Awaitable[bool] | bool) -> bool:
    return await result if inspect.isawaitable(result) else result


# -- answering -------------------------------------------------------------------------------


async def test_a_handler_returning_within_the_sync_window_answers_in_the_request(toolkit: Toolkit) -> None:
    async def handle(job: Job, ctx: Context) -> Any:
        return {"doubled": job.payload["n"] * 2, "attempt": job.attempt, "execution": job.execution_id,
                "queue": job.queue, "parameters": job.parameters, "metadata": job.metadata}

    seen, _ = await toolkit.deploy("double", handle)
    execution_id = await toolkit.enqueue("double", {"n": 21}, parameters={"unit": "kg"}, metadata={"team": "ops"})

    done = await wait_for_state(toolkit.api, execution_id, "SUCCEEDED")
    assert done["result"] == {"doubled": 42, "attempt": 0, "execution": execution_id, "queue": "default",
                              "parameters": {"unit": "kg"}, "metadata": {"team": "ops"}}
    [attempt] = await toolkit.attempts(execution_id)
    assert attempt["http_status"] == 200  # the result came in the reply
    assert seen.sent == []  # no completion callback, nothing else to report


async def test_a_handler_slower_than_the_sync_window_answers_202_heartbeats_and_completes(toolkit: Toolkit) -> None:
    async def handle(job: Job, ctx: Context) -> Any:
        await asyncio.sleep(2.5)  # past the 1 s timeout: only the heartbeats keep the attempt alive
        return {"slow": "but done"}

    seen, _ = await toolkit.deploy("slow", handle, sync_window=0.2, registration={"timeout_seconds": 1})
    execution_id = await toolkit.enqueue("slow")

    done = await wait_for_state(toolkit.api, execution_id, "SUCCEEDED")
    assert done["result"] == {"slow": "but done"}
    [attempt] = await toolkit.attempts(execution_id)  # never abandoned
    assert attempt["state"] == "SUCCEEDED" and attempt["http_status"] is None  # reported by callback
    assert len(seen.bodies("heartbeat")) >= 4  # a quarter of the timeout apart
    assert seen.bodies("complete") == [{"outcome": "succeeded", "result": {"slow": "but done"}}]


async def test_a_deadline_sooner_than_the_sync_window_shortens_it_to_half_the_time_left(toolkit: Toolkit) -> None:
    async def handle(job: Job, ctx: Context) -> Any:
        await asyncio.sleep(1.2)  # past the 0.8 s timeout; the 10 s sync window would outlast it
        return {"in time": True}

    await toolkit.deploy("hurried", handle, sync_window=10.0, registration={"timeout_seconds": 0.8})
    execution_id = await toolkit.enqueue("hurried", max_attempts=1)

    done = await wait_for_state(toolkit.api, execution_id, {"SUCCEEDED", "DEAD_LETTER"})
    assert done["state"] == "SUCCEEDED" and done["result"] == {"in time": True}
    [attempt] = await toolkit.attempts(execution_id)
    assert attempt["http_status"] is None  # answered 202 after 0.4 s, completed by callback


# -- failures ----------------------------------------------------------------------------------


@pytest.mark.parametrize("sync_window", [10.0, 0.0], ids=["in-the-reply", "by-callback"])
async def test_an_exception_fails_the_attempt_and_the_next_attempt_runs(toolkit: Toolkit, sync_window: float) -> None:
    async def handle(job: Job, ctx: Context) -> Any:
        if job.attempt == 0:
            raise ValueError("the upstream API timed out")
        return {"attempt": job.attempt}

    await toolkit.deploy("flaky", handle, sync_window=sync_window)
    execution_id = await toolkit.enqueue("flaky", max_attempts=3)

    done = await wait_for_state(toolkit.api, execution_id, "SUCCEEDED")
    assert done["result"] == {"attempt": 1}
    failed, succeeded = await toolkit.attempts(execution_id)
    assert failed["state"] == "FAILED" and succeeded["state"] == "SUCCEEDED"
    assert (failed["error_type"], failed["error"]) == ("ValueError", "the upstream API timed out")
    assert failed["http_status"] == (500 if sync_window else None)  # None: reported by the completion


async def test_an_exception_is_recorded_alike_in_the_reply_and_after_a_202(toolkit: Toolkit) -> None:
    class CardDeclined(Exception):
        pass

    async def handle(job: Job, ctx: Context) -> Any:
        raise CardDeclined(f"card ending {job.payload['card']} was declined")

    in_reply, _ = await toolkit.deploy("charge-now", handle, sync_window=10.0)
    by_callback, _ = await toolkit.deploy("charge-later", handle, sync_window=0.0)
    now = await toolkit.enqueue("charge-now", {"card": "4242"}, max_attempts=1)
    later = await toolkit.enqueue("charge-later", {"card": "4242"}, max_attempts=1)

    ended = [await wait_for_state(toolkit.api, execution_id, "DEAD_LETTER") for execution_id in (now, later)]

    assert [(e["error_type"], e["last_error"]) for e in ended] == [
        ("CardDeclined", "card ending 4242 was declined")] * 2
    assert in_reply.bodies("complete") == []  # the reply's body said it
    assert by_callback.bodies("complete") == [{"outcome": "failed", "retryable": True, "error": {
        "message": "card ending 4242 was declined", "type": "CardDeclined"}}]


@pytest.mark.parametrize("sync_window", [10.0, 0.0], ids=["in-the-reply", "by-callback"])
async def test_permanent_dead_letters_the_execution_after_one_attempt(toolkit: Toolkit, sync_window: float) -> None:
    async def handle(job: Job, ctx: Context) -> Any:
        raise Permanent("the payload names no customer")

    seen, _ = await toolkit.deploy("strict", handle, sync_window=sync_window)
    execution_id = await toolkit.enqueue("strict", max_attempts=5)

    done = await wait_for_state(toolkit.api, execution_id, "DEAD_LETTER")
    assert done["attempt"] == 0 and done["last_error"] == "the payload names no customer"
    [attempt] = await toolkit.attempts(execution_id)
    assert attempt["state"] == "FAILED" and attempt["error_type"] == "Permanent"
    assert seen.bodies("complete") == ([] if sync_window else [{"outcome": "failed", "retryable": False, "error": {
        "message": "the payload names no customer", "type": "Permanent"}}])


# -- signatures --------------------------------------------------------------------------------


async def test_a_dispatch_signed_with_another_secret_is_refused_with_401(toolkit: Toolkit) -> None:
    calls: list[Job] = []

    async def handle(job: Job, ctx: Context) -> Any:
        calls.append(job)

    other = "whsec_" + "b3RoZXItc2VjcmV0LW9mLTMyLWJ5dGVzLWxvbmcuLi4="
    await toolkit.deploy("wrong-secret", handle, secret=other)
    execution_id = await toolkit.enqueue("wrong-secret", max_attempts=1)

    await wait_for_state(toolkit.api, execution_id, "DEAD_LETTER")
    [attempt] = await toolkit.attempts(execution_id)
    assert attempt["http_status"] == 401 and "no signature matches" in attempt["error"]
    assert calls == []


SECRET_A = "whsec_" + "c2VjcmV0LWEtZm9yLXRoZS10b29sa2l0LXRlc3RzLi4="
SECRET_B = "whsec_" + "c2VjcmV0LWItZm9yLXRoZS10b29sa2l0LXRlc3RzLi4="


def forged(*secrets: str, age: float = 0.0, attempt: int = 0, body: bytes | None = None,
           ) -> tuple[bytes, dict[str, str]]:
    """A dispatch of `attempt` signed by the standardwebhooks package with each of `secrets`,
    `age` seconds ago. Its callback URL goes nowhere: a handler that reports nothing makes no
    callback."""
    body = body or json.dumps({"execution_id": "0f8fad5b-d9cb-469f-a165-70867728950e", "attempt": attempt,
                               "payload": {"n": 1}, "callback": {"url": "http://127.0.0.1:9/v1/executions/x",
                                                                 "token": f"{attempt}.x"}}).encode()
    signed_at = datetime.fromtimestamp(time.time() - age, UTC)
    msg_id = "0f8fad5b-d9cb-469f-a165-70867728950e"
    return body, {"webhook-id": msg_id, "webhook-timestamp": str(int(signed_at.timestamp())),
                  "webhook-signature": " ".join(Webhook(secret).sign(msg_id, signed_at, body.decode())
                                                for secret in secrets),
                  "jobwire-attempt": str(attempt), "content-type": "application/json"}


@pytest.fixture
async def forgery_target() -> AsyncIterator[tuple[str, list[Job]]]:
    """A toolkit app holding SECRET_A and SECRET_B (a rotation), no Jobwire needed."""
    calls: list[Job] = []

    async def handle(job: Job, ctx: Context) -> Any:
        calls.append(job)
        return {"n": job.payload["n"]}

    served = Served(asgi_app(handle, [SECRET_A, SECRET_B]))
    await served.start()
    yield served.url, calls
    await served.stop()


@pytest.mark.parametrize("case", ["stale", "ahead", "wrong-secret", "tampered", "unsigned"])
async def test_a_request_jobwire_did_not_just_sign_is_refused_with_401(
        forgery_target: tuple[str, list[Job]], case: str) -> None:
    url, calls = forgery_target
    body, headers = forged(SECRET_A, age={"stale": 301 + 5, "ahead": -(300 + 5)}.get(case, 0.0))
    if case == "wrong-secret":
        body, headers = forged("whsec_" + "bm90LW9uZS1vZi10aGUtYXBwJ3Mtc2VjcmV0cy4uLi4=")
    elif case == "tampered":
        body = body.replace(b'"n": 1', b'"n": 2')
    elif case == "unsigned":
        del headers["webhook-signature"]

    async with httpx.AsyncClient() as http:
        response = await http.post(url, content=body, headers=headers)

    assert response.status_code == 401, response.text
    assert response.headers["content-type"] == "application/problem+json"
    assert response.json()["status"] == 401
    assert calls == []


async def test_either_secret_of_a_rotation_verifies(forgery_target: tuple[str, list[Job]]) -> None:
    url, calls = forgery_target
    async with httpx.AsyncClient() as http:
        for attempt, secret in enumerate((SECRET_A, SECRET_B)):
            body, headers = forged(secret, attempt=attempt)
            response = await http.post(url, content=body, headers=headers)
            assert response.status_code == 200, response.text
            assert response.json() == {"result": {"n": 1}}
    assert len(calls) == 2


async def test_an_exact_replay_within_the_tolerance_is_refused_and_never_runs_the_handler(
        forgery_target: tuple[str, list[Job]]) -> None:
    url, calls = forgery_target
    body, headers = forged(SECRET_A)
    async with httpx.AsyncClient() as http:
        first = await http.post(url, content=body, headers=headers)
        replays = [await http.post(url, content=body, headers=headers) for _ in range(3)]

    assert first.status_code == 200 and first.json() == {"result": {"n": 1}}, first.text
    for replay in replays:
        assert replay.status_code == 401 and replay.headers["content-type"] == "application/problem+json"
        assert "a replay" in replay.json()["detail"]
    assert len(calls) == 1


@pytest.mark.parametrize("signatures", ["the-other-one-alone", "with-one-more", "reordered"])
async def test_a_replay_with_its_signature_header_rewritten_is_still_a_replay(
        forgery_target: tuple[str, list[Job]], signatures: str) -> None:
    url, calls = forgery_target
    body, headers = forged(SECRET_A, SECRET_B)  # signed during a rotation: one signature per secret
    signed_by_a, signed_by_b = headers["webhook-signature"].split()
    rewritten = {"the-other-one-alone": signed_by_b, "with-one-more": f"{signed_by_a} {signed_by_b} v1,AAAA",
                 "reordered": f"{signed_by_b} {signed_by_a}"}[signatures]
    async with httpx.AsyncClient() as http:
        first = await http.post(url, content=body, headers=headers)
        replay = await http.post(url, content=body, headers={**headers, "webhook-signature": rewritten})

    assert first.status_code == 200, first.text
    assert replay.status_code == 401 and "a replay" in replay.json()["detail"], replay.text
    assert len(calls) == 1


async def test_a_new_attempt_of_the_same_execution_is_not_a_replay(forgery_target: tuple[str, list[Job]]) -> None:
    url, calls = forgery_target
    async with httpx.AsyncClient() as http:
        # The same webhook-id (the execution), most often the same second too: another attempt's body.
        for attempt in (0, 1):
            body, headers = forged(SECRET_A, attempt=attempt)
            response = await http.post(url, content=body, headers=headers)
            assert response.status_code == 200, response.text
    assert [job.attempt for job in calls] == [0, 1]


async def test_a_handler_holding_old_and_new_secret_takes_jobwire_dispatches_through_a_rotation(
        toolkit: Toolkit) -> None:
    async def handle(job: Job, ctx: Context) -> Any:
        return job.payload

    # Registered (the old secret), then rotated (a new one; Jobwire signs with both), then the
    # handler is deployed holding both.
    port, old = await toolkit.register("rotating")
    response = await toolkit.api.post("/v1/handlers/rotating/secrets", json={})
    assert response.status_code == 201, response.text
    new = response.json()
    await toolkit.serve(port, handle, [old, new["secret"]])

    first = await toolkit.enqueue("rotating", {"signed_by": "both"})
    assert (await wait_for_state(toolkit.api, first, "SUCCEEDED"))["result"] == {"signed_by": "both"}

    # The old secret retired: Jobwire signs with the new one alone.
    handler = (await toolkit.api.get("/v1/handlers/rotating")).json()
    [old_id] = [s["id"] for s in handler["secrets"] if s["id"] != new["id"]]
    assert (await toolkit.api.delete(f"/v1/handlers/rotating/secrets/{old_id}")).status_code == 204
    second = await toolkit.enqueue("rotating", {"signed_by": "new"})
    assert (await wait_for_state(toolkit.api, second, "SUCCEEDED"))["result"] == {"signed_by": "new"}


# -- reporting ---------------------------------------------------------------------------------


async def test_progress_shows_on_the_execution_while_the_handler_works(toolkit: Toolkit) -> None:
    release = asyncio.Event()

    async def handle(job: Job, ctx: Context) -> Any:
        ctx.progress(total=200, succeeded=50, failed=2, status="rendering page 1 of 4")
        await release.wait()
        ctx.progress(succeeded=198, status="done")  # failed keeps its 2
        return {"pages": 4}

    await toolkit.deploy("render", handle)
    execution_id = await toolkit.enqueue("render")

    async def progress_shown() -> bool:
        body = (await toolkit.api.get(f"/v1/executions/{execution_id}")).json()
        return body["progress"] is not None and body["progress"]["total"] == 200

    await eventually(progress_shown)
    running = (await toolkit.api.get(f"/v1/executions/{execution_id}")).json()
    assert running["state"] == "PROCESSING"
    assert running["progress"] == {"total": 200, "succeeded": 50, "failed": 2, "status": "rendering page 1 of 4",
                                   "percentage": 26}
    release.set()
    done = await wait_for_state(toolkit.api, execution_id, "SUCCEEDED")
    assert done["progress"] == {"total": 200, "succeeded": 198, "failed": 2, "status": "done", "percentage": 100}


async def test_1200_log_entries_all_arrive_in_batches_of_at_most_500(toolkit: Toolkit) -> None:
    async def handle(job: Job, ctx: Context) -> Any:
        for n in range(1200):
            ctx.log("WARN" if n % 100 == 99 else "INFO", f"row {n}")
        return {"rows": 1200}

    seen, _ = await toolkit.deploy("chatty", handle)
    execution_id = await toolkit.enqueue("chatty")

    await wait_for_state(toolkit.api, execution_id, "SUCCEEDED")
    batches = [len(body["entries"]) for body in seen.bodies("logs")]
    assert len(batches) >= 3 and max(batches) <= 500 and sum(batches) == 1200
    logs = await toolkit.logs(execution_id)  # flushed before the reply: all there at SUCCEEDED
    assert [entry["message"] for entry in logs] == [f"row {n}" for n in range(1200)]
    assert [entry["level"] for entry in logs].count("WARN") == 12
    assert {entry["attempt"] for entry in logs} == {0}


async def test_a_log_flush_jobwire_refuses_does_not_fail_the_job(toolkit: Toolkit) -> None:
    async def handle(job: Job, ctx: Context) -> Any:
        ctx.log("INFO", "this batch is refused")
        return {"ok": True}

    async def spoil_the_logs_token(request: httpx.Request) -> None:
        if request.url.path.endswith("/logs"):
            request.headers["authorization"] = "Bearer 0.not-this-executions-token"

    seen, _ = await toolkit.deploy("unlogged", handle, hooks=spoil_the_logs_token)
    execution_id = await toolkit.enqueue("unlogged")

    done = await wait_for_state(toolkit.api, execution_id, "SUCCEEDED")
    assert done["result"] == {"ok": True}
    assert ("logs", 403) in seen.answered  # Jobwire refused the batch
    assert await toolkit.logs(execution_id) == []


# -- steps -------------------------------------------------------------------------------------


async def test_a_step_recorded_by_a_failed_attempt_is_replayed_not_run_again(toolkit: Toolkit) -> None:
    charges: list[str] = []

    async def charge_card(execution_id: str) -> dict[str, Any]:
        charges.append(execution_id)
        return {"charge": f"ch_{len(charges)}", "amount": 4200}

    async def handle(job: Job, ctx: Context) -> Any:
        charged = await ctx.run_step_once("charge-card", lambda: charge_card(job.execution_id))
        if job.attempt == 0:
            raise ConnectionError("the mail server hung up after the card was charged")
        return {"charged": charged, "attempt": job.attempt}

    seen, _ = await toolkit.deploy("checkout", handle)
    execution_id = await toolkit.enqueue("checkout", max_attempts=3)

    done = await wait_for_state(toolkit.api, execution_id, "SUCCEEDED")
    assert done["result"] == {"charged": {"charge": "ch_1", "amount": 4200}, "attempt": 1}
    assert charges == [execution_id]  # charged once, by attempt 0
    assert [a["state"] for a in await toolkit.attempts(execution_id)] == ["FAILED", "SUCCEEDED"]
    assert [(name, status) for name, status in seen.answered if name == "charge-card"] == [
        ("charge-card", 404), ("charge-card", 201),  # attempt 0: not recorded yet, so run and record
        ("charge-card", 200)]  # attempt 1: recorded, so no PUT and no charge


# -- workflows ---------------------------------------------------------------------------------


def parents_seen(parents: dict[str, Parent]) -> dict[str, Any]:
    return {ref: [p.execution_id, p.state, p.result, p.has_result] for ref, p in parents.items()}


async def test_a_job_of_a_workflow_knows_its_place_and_its_parents_results(toolkit: Toolkit) -> None:
    async def produce(job: Job, ctx: Context) -> Any:
        return job.payload

    async def combine(job: Job, ctx: Context) -> Any:
        where = None if job.workflow is None else [job.workflow.id, job.workflow.ref]
        return {"workflow": where, "parents": parents_seen(dict(job.parents)),
                "fetched": parents_seen(await ctx.parents())}

    await toolkit.deploy("produce", produce)
    seen, _ = await toolkit.deploy("combine", combine)
    made = await toolkit.api.post("/v1/workflows", json={"jobs": [
        {"ref": "a", "handler": "produce", "payload": {"v": 1}},
        {"ref": "b", "handler": "produce", "payload": [2]},
        {"ref": "c", "handler": "combine", "depends_on": ["a", "b"]},
        {"ref": "root", "handler": "combine"}]})
    assert made.status_code == 201, made.text
    workflow = made.json()
    ids = {item["ref"]: item["execution_id"] for item in workflow["items"]}

    done = await wait_for_state(toolkit.api, ids["c"], "SUCCEEDED")
    parents = {"a": [ids["a"], "SUCCEEDED", {"v": 1}, True], "b": [ids["b"], "SUCCEEDED", [2], True]}
    assert done["result"] == {"workflow": [workflow["id"], "c"], "parents": parents, "fetched": parents}
    root = await wait_for_state(toolkit.api, ids["root"], "SUCCEEDED")
    assert root["result"] == {"workflow": [workflow["id"], "root"], "parents": {}, "fetched": {}}
    alone = await wait_for_state(toolkit.api, await toolkit.enqueue("combine"), "SUCCEEDED")
    assert alone["result"] == {"workflow": None, "parents": {}, "fetched": {}}
    assert [name for name, _ in seen.sent] == []  # every result was in the dispatch: nothing asked


async def test_parents_results_past_256_kib_are_fetched_by_ctx_parents(toolkit: Toolkit) -> None:
    async def produce(job: Job, ctx: Context) -> Any:
        return "x" * 140_000

    async def combine(job: Job, ctx: Context) -> Any:
        fetched = await ctx.parents()
        return {"inline": parents_seen(dict(job.parents)),
                "fetched": {ref: [p.state, len(p.result), p.has_result] for ref, p in fetched.items()}}

    await toolkit.deploy("big", produce)
    seen, _ = await toolkit.deploy("combine", combine)
    made = (await toolkit.api.post("/v1/workflows", json={"jobs": [
        {"ref": "p1", "handler": "big"}, {"ref": "p2", "handler": "big"},
        {"ref": "child", "handler": "combine", "depends_on": ["p1", "p2"]}]})).json()
    ids = {item["ref"]: item["execution_id"] for item in made["items"]}

    done = await wait_for_state(toolkit.api, ids["child"], "SUCCEEDED")
    assert done["result"] == {
        "inline": {"p1": [ids["p1"], "SUCCEEDED", None, False], "p2": [ids["p2"], "SUCCEEDED", None, False]},
        "fetched": {"p1": ["SUCCEEDED", 140_000, True], "p2": ["SUCCEEDED", 140_000, True]}}
    assert [(name, status) for name, status in seen.answered] == [("parents", 200)]  # one page held them both


async def test_a_handler_spawns_children_waits_for_them_all_and_a_replay_spawns_none_twice(toolkit: Toolkit) -> None:
    """ctx.spawn then ctx.suspend(children=True): fan-out and fan-in in one handler. The resumed
    dispatch replays the handler, whose spawn of the same refs gets the same executions back."""
    spawned: list[dict[str, str]] = []

    async def square(job: Job, ctx: Context) -> Any:
        return job.payload["n"] ** 2

    async def fan(job: Job, ctx: Context) -> Any:
        spawned.append(await ctx.spawn([{"ref": f"n{n}", "handler": "square", "payload": {"n": n}}
                                        for n in range(1, 4)]))
        if job.resume is None:
            ctx.suspend(children=True, timeout_seconds=60)
        assert job.resume.reason == "children"
        inline = {ref: [c.state, c.result] for ref, c in job.resume.children.items()}
        return {"inline": inline, "fetched": {ref: c.result for ref, c in (await ctx.children()).items()}}

    await toolkit.deploy("square", square)
    await toolkit.deploy("fan", fan)
    done = await wait_for_state(toolkit.api, await toolkit.enqueue("fan"), "SUCCEEDED", timeout=20)
    assert done["result"] == {"inline": {"n1": ["SUCCEEDED", 1], "n2": ["SUCCEEDED", 4], "n3": ["SUCCEEDED", 9]},
                              "fetched": {"n1": 1, "n2": 4, "n3": 9}}
    first, replayed = spawned
    assert first == replayed and sorted(first) == ["n1", "n2", "n3"]


# -- durable waits and signals -----------------------------------------------------------------


@pytest.mark.parametrize("sync_window", [10.0, 0.0], ids=["in-the-reply", "by-callback"])
async def test_a_handler_suspends_until_a_signal_the_client_sends_and_completes_with_its_payload(
        toolkit: Toolkit, sync_window: float) -> None:
    asked: list[str] = []

    async def ask_for_approval(execution_id: str) -> dict[str, Any]:
        asked.append(execution_id)
        return {"mail": f"approve-{len(asked)}"}

    async def approval(job: Job, ctx: Context) -> Any:
        mail = await ctx.run_step_once("ask", lambda: ask_for_approval(job.execution_id))
        if job.resume is None:  # the first dispatch: ask, then wait for the answer (a day at most)
            try:
                ctx.suspend(signals=["approved", "rejected"], timeout_seconds=600)
            except Exception:  # a handler's broad except does not stop the suspension on its way out
                return "swallowed"
        assert job.resume is not None
        decision = job.resume.signals[0]
        return {"decision": decision.name, "payload": decision.payload, "mail": mail,
                "resume": [job.resume.n, job.resume.reason, job.resume.signal("approved") is decision],
                "steps": dict(job.steps), "attempt": job.attempt}

    seen, _ = await toolkit.deploy("approval", approval, sync_window=sync_window)
    execution_id = await toolkit.enqueue("approval", {"amount": 4200})
    await wait_for_state(toolkit.api, execution_id, "WAITING")

    async with AsyncJobwireClient(toolkit.server.url) as client:
        [blocker] = (await client.executions.blockers(execution_id)).items
        assert (blocker.reason, blocker.signals, blocker.until) == ("suspended", ["approved", "rejected"], None)
        assert blocker.timeout_at is not None and blocker.timeout_at.tzinfo is not None
        sent = await client.executions.signal(execution_id, "approved", {"by": "ana"})
        assert isinstance(sent, SignalSent) and sent.woke
        done = await client.executions.wait(execution_id, timeout=15)
        [signal] = [s async for s in client.executions.signals(execution_id)]
    assert done.state == "SUCCEEDED" and done.attempt == 0  # a resumption spends no attempt
    assert done.result == {"decision": "approved", "payload": {"by": "ana"}, "mail": {"mail": "approve-1"},
                           "resume": [1, "signal", True], "steps": {"ask": {"mail": "approve-1"}}, "attempt": 0}
    assert (signal.id, signal.name, signal.payload) == (sent.id, "approved", {"by": "ana"})
    assert signal.consumed_at is not None
    assert asked == [execution_id]  # asked once, by the first dispatch
    # The resumed dispatch held the step: run_step_once answered from it, asking Jobwire nothing.
    assert [(name, status) for name, status in seen.answered if name == "ask"] == [("ask", 404), ("ask", 201)]
    if sync_window == 0.0:  # after a 202 the suspension, like the outcome, is reported by callback
        assert [body["outcome"] for body in seen.bodies("complete")] == ["suspended", "succeeded"]
        assert seen.bodies("complete")[0]["suspend"] == {"signals": ["approved", "rejected"], "timeout_seconds": 600.0}
    else:
        assert seen.bodies("complete") == []


async def test_a_timer_resumes_with_the_steps_recorded_by_the_suspension_and_a_retry_keeps_them(
        toolkit: Toolkit) -> None:
    fetched: list[int] = []

    async def report(job: Job, ctx: Context) -> Any:
        if job.resume is None and job.attempt == 0:
            fetched.append(1)
            ctx.suspend(seconds=0.5, steps={"fetched": {"rows": 3}})
        if job.resume is not None:
            raise ConnectionError("the printer hung up")  # a failure after a resumption spends an attempt
        rows = await ctx.run_step_once("fetched", lambda: fetched.append(2))
        return {"rows": rows, "attempt": job.attempt, "steps": dict(job.steps)}

    seen, _ = await toolkit.deploy("report", report)
    execution_id = await toolkit.enqueue("report", max_attempts=2)
    done = await wait_for_state(toolkit.api, execution_id, "SUCCEEDED", timeout=15)
    assert done["result"] == {"rows": {"rows": 3}, "attempt": 1, "steps": {"fetched": {"rows": 3}}}
    assert fetched == [1]  # the step came with the retry's dispatch: never run again
    assert [name for name, _ in seen.sent] == []  # nothing asked of Jobwire, nothing reported by callback
    assert [a["state"] for a in await toolkit.attempts(execution_id)][-2:] == ["FAILED", "SUCCEEDED"]


async def test_a_wait_nobody_signals_resumes_at_its_timeout(toolkit: Toolkit) -> None:
    async def approval(job: Job, ctx: Context) -> Any:
        if job.resume is None:
            ctx.suspend(signals="approved", timeout_seconds=0.5)
        if job.resume.reason == "timeout":
            raise Permanent("nobody approved in time", error_type="approval_timeout")
        return "approved"

    await toolkit.deploy("approval", approval)
    execution_id = await toolkit.enqueue("approval")
    done = await wait_for_state(toolkit.api, execution_id, "DEAD_LETTER", timeout=15)
    assert (done["error_type"], done["last_error"]) == ("approval_timeout", "nobody approved in time")


async def test_a_suspension_given_nothing_to_wait_for_fails_the_attempt_where_it_is_made(toolkit: Toolkit) -> None:
    async def confused(job: Job, ctx: Context) -> Any:
        ctx.suspend(timeout_seconds=None, signals=[])

    await toolkit.deploy("confused", confused)
    execution_id = await toolkit.enqueue("confused", max_attempts=1)
    done = await wait_for_state(toolkit.api, execution_id, "DEAD_LETTER")
    assert done["error_type"] == "ValueError"
    assert done["last_error"] == "suspend waits for something: until, seconds, signals, children or timeout_seconds"


@pytest.mark.parametrize(("given", "said"), [
    ({}, "suspend waits for something"),
    ({"until": datetime(2030, 1, 1)}, "until is an aware datetime"),
    ({"until": datetime(2999, 1, 1, tzinfo=UTC)}, "until is at most 365 days ahead"),
    ({"until": datetime.now(UTC), "seconds": 5}, "not both"),
    ({"seconds": -1}, "seconds is a number of seconds from 0 to 31536000"),
    ({"seconds": True}, "seconds is a number of seconds"),
    ({"timeout_seconds": float("inf")}, "timeout_seconds is a number of seconds"),
    ({"signals": ["ok", "no way"]}, "a signal name matches"),
    ({"signals": [f"s{i}" for i in range(101)]}, "at most 100 signals"),
    ({"seconds": 1, "steps": {"bad name": 1}}, "a step name matches"),
])
def test_a_suspension_is_checked_as_jobwire_checks_it(given: dict[str, Any], said: str) -> None:
    with pytest.raises(ValueError, match=said):
        Suspend(**given)


def test_a_suspension_is_the_suspend_object_jobwire_reads() -> None:
    until = datetime(2026, 12, 24, 18, 0, tzinfo=timezone(timedelta(hours=1)))
    suspension = Suspend(until=until, signals=("approved", "approved", "rejected"), timeout_seconds=3600)
    assert suspension.document == {"until": "2026-12-24T17:00:00Z", "signals": ["approved", "rejected"],
                                   "timeout_seconds": 3600.0}
    assert str(suspension) == ("suspended: waits until 2026-12-24T17:00:00Z, or for a signal (approved, rejected), "
                               "or at most 3600 s")
    assert not isinstance(suspension, Exception)  # an `except Exception` lets it through


# -- outages of Jobwire ------------------------------------------------------------------------


async def accepted(toolkit: Toolkit, execution_id: str) -> bool:
    """Answered 202 and let go by the node: only the handler's callbacks can end it now."""
    body = (await toolkit.api.get(f"/v1/executions/{execution_id}")).json()
    return bool(body["state"] == "PROCESSING" and body["locked_by"] is None)


def unanswered(seen: Callbacks, callback: str) -> int:
    """Tries of `callback` that got no answer (the connection was refused)."""
    return (sum(1 for name, _ in seen.sent if name == callback)
            - sum(1 for name, _ in seen.answered if name == callback))


async def test_a_202_job_survives_a_restart_of_jobwire_while_its_handler_finishes(
        toolkit: Toolkit, jobwire: Callable[..., Awaitable[RunningServer]]) -> None:
    release = asyncio.Event()
    charges: list[str] = []

    async def charge(execution_id: str) -> dict[str, Any]:
        charges.append(execution_id)
        return {"charge": f"ch_{len(charges)}"}

    async def handle(job: Job, ctx: Context) -> Any:
        await release.wait()
        # About to complete when Jobwire is away: a step, a log line, then the outcome.
        charged = await ctx.run_step_once("charge-card", lambda: charge(job.execution_id))
        ctx.log("INFO", "charged")
        return {"charged": charged}

    seen, _ = await toolkit.deploy("restarted", handle, sync_window=0.05, registration={"timeout_seconds": 60})
    execution_id = await toolkit.enqueue("restarted", max_attempts=3)
    await eventually(lambda: accepted(toolkit, execution_id))

    await toolkit.server.stop()
    release.set()
    await eventually(lambda: unanswered(seen, "charge-card") >= 2)  # asked, and asked again
    await jobwire(port=toolkit.server.settings.port, scan_interval=0.2)  # the same port and database

    done = await wait_for_state(toolkit.api, execution_id, {"SUCCEEDED", "DEAD_LETTER"}, timeout=30)
    assert done["state"] == "SUCCEEDED" and done["result"] == {"charged": {"charge": "ch_1"}}
    assert [a["state"] for a in await toolkit.attempts(execution_id)] == ["SUCCEEDED"]  # one attempt
    assert charges == [execution_id]  # the work ran once
    assert [status for name, status in seen.answered if name == "complete"] == [200]
    assert [entry["message"] for entry in await toolkit.logs(execution_id)] == ["charged"]


async def test_callbacks_retry_until_the_deadline_with_a_warning_each_then_one_error_and_stop(
        toolkit: Toolkit, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="jobwire.handler")
    release = asyncio.Event()

    async def handle(job: Job, ctx: Context) -> Any:
        await release.wait()
        return {"never": "delivered"}

    seen, _ = await toolkit.deploy("orphaned", handle, sync_window=0.05, registration={"timeout_seconds": 1})
    execution_id = await toolkit.enqueue("orphaned", max_attempts=1)
    await eventually(lambda: accepted(toolkit, execution_id))

    await toolkit.server.stop()  # and never back
    release.set()

    def gave_up(callback: str) -> list[logging.LogRecord]:
        return [r for r in caplog.records if r.name == "jobwire.handler" and r.levelno == logging.ERROR
                and f"POST /{callback} not delivered" in r.getMessage()]

    await eventually(lambda: bool(gave_up("complete")))
    tries = sum(1 for name, _ in seen.sent if name == "complete")
    ours = [r for r in caplog.records if r.name == "jobwire.handler" and r.levelno >= logging.WARNING]
    assert all(r.exc_info is None for r in ours)  # no traceback
    retried = [r for r in ours if r.levelno == logging.WARNING and "POST /complete failed" in r.getMessage()]
    assert len(gave_up("complete")) == 1 and len(retried) == tries - 1  # a WARNING per retry, one ERROR
    assert {r.levelno for r in ours} <= {logging.WARNING, logging.ERROR}
    errors = [r.getMessage().split(" not delivered")[0] for r in ours if r.levelno == logging.ERROR]
    assert len(errors) == len(set(errors))  # one ERROR for each callback that gave up (a heartbeat, too)


# -- cancellation ------------------------------------------------------------------------------


@pytest.mark.parametrize("sync_window", [10.0, 0.1], ids=["during-the-call", "after-202"])
async def test_a_cancelled_execution_is_seen_by_is_cancelled(toolkit: Toolkit, sync_window: float) -> None:
    started, stopped = asyncio.Event(), asyncio.Event()

    async def handle(job: Job, ctx: Context) -> Any:
        started.set()
        async with asyncio.timeout(10):
            while not await ctx.is_cancelled():
                await asyncio.sleep(0.05)
        stopped.set()
        return {"stopped": True}

    await toolkit.deploy("cancellable", handle, sync_window=sync_window, registration={"timeout_seconds": 30})
    execution_id = await toolkit.enqueue("cancellable")
    await asyncio.wait_for(started.wait(), 10)
    await asyncio.sleep(0.2)  # past the 202, when there is one

    response = await toolkit.api.post(f"/v1/executions/{execution_id}/cancel")
    assert response.status_code == 200 and response.json()["state"] == "CANCELLED", response.text
    await asyncio.wait_for(stopped.wait(), 5)

    await asyncio.sleep(0.3)  # the handler's answer lands, and changes nothing
    after = (await toolkit.api.get(f"/v1/executions/{execution_id}")).json()
    assert after["state"] == "CANCELLED" and after["result"] is None


# -- shutdown ----------------------------------------------------------------------------------


async def test_shutdown_lets_an_accepted_attempt_finish_and_complete(toolkit: Toolkit) -> None:
    started = asyncio.Event()

    async def handle(job: Job, ctx: Context) -> Any:
        started.set()
        await asyncio.sleep(0.5)
        return {"finished": "during shutdown"}

    _, served = await toolkit.deploy("draining", handle, sync_window=0.05)
    execution_id = await toolkit.enqueue("draining")
    await asyncio.wait_for(started.wait(), 10)
    await asyncio.sleep(0.1)  # answered 202

    await served.stop()  # lifespan shutdown waits for the attempt, which completes
    done = (await toolkit.api.get(f"/v1/executions/{execution_id}")).json()
    assert done["state"] == "SUCCEEDED" and done["result"] == {"finished": "during shutdown"}


async def test_shutdown_stops_an_attempt_past_the_grace_and_reports_it_failed(toolkit: Toolkit) -> None:
    started = asyncio.Event()

    async def handle(job: Job, ctx: Context) -> Any:
        started.set()
        await asyncio.Event().wait()  # never done

    _, served = await toolkit.deploy("stuck", handle, sync_window=0.05, shutdown_grace=0.2,
                                        registration={"timeout_seconds": 60})
    execution_id = await toolkit.enqueue("stuck", max_attempts=1)
    await asyncio.wait_for(started.wait(), 10)
    await asyncio.sleep(0.1)

    await served.stop()
    done = await wait_for_state(toolkit.api, execution_id, "DEAD_LETTER")  # retryable, but no attempt left
    assert done["error_type"] == "HandlerStopped"


# -- mounting ----------------------------------------------------------------------------------


async def test_the_app_mounted_in_starlette_serves_dispatches_and_shuts_down_with_it(toolkit: Toolkit) -> None:
    # Jobwire follows no redirect, and Starlette answers the bare mount path (/hooks) with a 307
    # to /hooks/: register a path under the mount.
    port = free_port()
    secret = (await register(toolkit.api, "mounted", f"http://127.0.0.1:{port}/hooks/mounted"))["secret"]
    finished: list[str] = []

    async def handle(job: Job, ctx: Context) -> Any:
        await asyncio.sleep(0.3)
        finished.append(job.execution_id)
        return {"served": "under /hooks"}

    handler = asgi_app(handle, secret, sync_window=0.05)

    @asynccontextmanager
    async def lifespan(_: Starlette) -> AsyncIterator[None]:
        yield
        await handler.shutdown()  # a mounted app gets no lifespan events of its own

    async def health(_: Any) -> PlainTextResponse:
        return PlainTextResponse("ok")

    site = Starlette(routes=[Route("/health", health), Mount("/hooks", app=handler)], lifespan=lifespan)
    served = Served(site, port)
    await served.start()
    toolkit.stack.push_async_callback(served.stop)
    execution_id = await toolkit.enqueue("mounted")
    async with httpx.AsyncClient() as http:
        assert (await http.get(f"{served.url}/health")).text == "ok"
        assert (await http.get(f"{served.url}/hooks/mounted")).status_code == 405

    await eventually(lambda: _state_is(toolkit, execution_id, "PROCESSING"))
    await asyncio.sleep(0.1)  # answered 202
    await served.stop()  # the parent's lifespan shutdown waits for the attempt
    assert finished == [execution_id]
    done = await wait_for_state(toolkit.api, execution_id, "SUCCEEDED")
    assert done["result"] == {"served": "under /hooks"}


async def _state_is(toolkit: Toolkit, execution_id: str, state: str) -> bool:
    return bool((await toolkit.api.get(f"/v1/executions/{execution_id}")).json()["state"] == state)
