"""Stateful jobs and handler limits at run time, against in-process servers and a real handler
(DESIGN §6.4).

The hand-over tests start the server with poll_interval=30: only a NOTIFY can wake it in time,
so "the next stateful job of the queue is dispatched within 2 s" proves that every way a stateful
execution leaves PROCESSING wakes the dispatchers. The handler's own timeline (start and end of
every call, recorded by the handler) shows what ran at once.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import UUID

import httpx
import pytest
from aiohttp import web

from app.db.database import Database
from app.db.executions import ExecutionRepository
from app.db.handlers import HandlerRepository
from app.domain.executions import NewJob
from app.domain.signing import new_handler_secret
from app.services.enqueue import EnqueueLimits, EnqueueService
from tests.conftest import HandlerServer, RunningServer, register, settled_scanner, wait_for_state

PROMPT = 2.0  # seconds: far below poll_interval, so only a NOTIFY can explain it
SLOW_POLL = 30.0
BASE = datetime.now(UTC) - timedelta(hours=1)


# --- a handler that records its own timeline -----------------------------------------------

@dataclass
class Call:
    name: str
    queue: str
    attempt: int
    job: dict[str, Any]
    start: float
    end: float | None = None


@dataclass
class Recorder:
    """Jobs carry {"name": …} as payload. A held (name, attempt) waits for its gate; a reply
    list per name gives the status of each attempt in turn (200 when none is left)."""

    url: str = ""
    calls: list[Call] = field(default_factory=list)
    gates: dict[tuple[str, int], asyncio.Event] = field(default_factory=dict)
    replies: dict[str, list[int]] = field(default_factory=dict)
    pause: float = 0.05

    def hold(self, name: str, attempt: int = 0) -> asyncio.Event:
        return self.gates.setdefault((name, attempt), asyncio.Event())

    def release_all(self) -> None:
        for gate in self.gates.values():
            gate.set()

    async def behaviour(self, _: web.Request, job: dict[str, Any]) -> web.StreamResponse:
        name = job["payload"]["name"]
        call = Call(name, job["queue"], job["attempt"], job, time.monotonic())
        self.calls.append(call)
        try:
            gate = self.gates.get((name, job["attempt"]))
            if gate is not None:
                await asyncio.wait_for(gate.wait(), 20)
            else:
                await asyncio.sleep(self.pause)
        finally:
            call.end = time.monotonic()
        statuses = self.replies.get(name)
        status = statuses.pop(0) if statuses else 200
        return web.json_response({"result": name} if status < 300 else {"error": name}, status=status)

    def of(self, name: str, attempt: int = 0) -> Call | None:
        return next((c for c in self.calls if c.name == name and c.attempt == attempt), None)

    async def started(self, name: str, attempt: int = 0, timeout: float = 5.0) -> Call:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if (call := self.of(name, attempt)) is not None:
                return call
            await asyncio.sleep(0.005)
        raise AssertionError(f"{name}#{attempt} was not dispatched within {timeout}s; "
                             f"calls: {[(c.name, c.attempt) for c in self.calls]}")

    def order(self, names: set[str]) -> list[tuple[str, int]]:
        return [(c.name, c.attempt) for c in sorted(self.calls, key=lambda c: c.start) if c.name in names]


def assert_no_overlap(calls: list[Call]) -> None:
    ordered = sorted(calls, key=lambda c: c.start)
    for before, after in zip(ordered, ordered[1:], strict=False):
        assert before.end is not None and before.end <= after.start, (
            f"{before.name}#{before.attempt} ran until {before.end}, {after.name}#{after.attempt} began {after.start}")


def overlaps(a: Call, b: Call) -> bool:
    a_end = a.end if a.end is not None else float("inf")
    b_end = b.end if b.end is not None else float("inf")
    return a.start < b_end and b.start < a_end


@dataclass
class Env:
    api: httpx.AsyncClient
    rec: Recorder
    server: RunningServer

    async def enqueue(self, name: str, **body: Any) -> dict[str, Any]:
        body.setdefault("handler", "work")
        response = await self.api.post("/v1/jobs", json={"payload": {"name": name}, "queue": "q", **body})
        assert response.status_code == 201, response.text
        return response.json()

    async def state(self, execution_id: str) -> dict[str, Any]:
        return (await self.api.get(f"/v1/executions/{execution_id}")).json()


@pytest.fixture
async def env(jobwire, handler: HandlerServer) -> AsyncIterator[Callable[..., Awaitable[Env]]]:
    """A server with the given settings (poll_interval=30 unless told), the handler `work`."""
    made: list[Env] = []

    async def make(*, handler_options: dict[str, Any] | None = None, **settings: Any) -> Env:
        settings.setdefault("poll_interval", SLOW_POLL)
        server = await jobwire(**settings)
        api = httpx.AsyncClient(base_url=server.url, timeout=10)
        rec = Recorder()
        rec.url = handler.route("/work", rec.behaviour)
        await register(api, "work", rec.url, **(handler_options or {}))
        made.append(Env(api, rec, server))
        return made[-1]

    yield make
    for e in made:
        e.rec.release_all()
        await e.api.aclose()


def at(seconds: float) -> str:
    return (BASE + timedelta(seconds=seconds)).isoformat()


async def queue_behind(e: Env, first: str = "s1") -> dict[str, dict[str, Any]]:
    """With `first` running, enqueue three more stateful jobs of its queue: s2 (priority 0, oldest),
    s3 and s4 (priority 5, s3 older). The next ones must run as s3, s4, s2."""
    jobs = {
        "s2": await e.enqueue("s2", stateful=True, run_at=at(1)),
        "s3": await e.enqueue("s3", stateful=True, priority=5, run_at=at(2)),
        "s4": await e.enqueue("s4", stateful=True, priority=5, run_at=at(3)),
    }
    await asyncio.sleep(0.3)  # the enqueue NOTIFYs woke the dispatcher: it must have taken none
    assert {c.name for c in e.rec.calls} == {first}, e.rec.order({"s1", "s2", "s3", "s4"})
    return jobs


async def finish_in_order(e: Env, jobs: dict[str, dict[str, Any]], expected: list[tuple[str, int]],
                          may_overlap: frozenset[tuple[str, int]] = frozenset()) -> None:
    """Every job SUCCEEDED, the stateful calls came in the expected order, and none of them
    overlapped (except `may_overlap`: a cancelled call the handler had not yet stopped)."""
    for job in jobs.values():
        await wait_for_state(e.api, job["id"], "SUCCEEDED", timeout=10)
    stateful = {name for name, _ in expected}
    assert e.rec.order(stateful) == expected
    assert_no_overlap([c for c in e.rec.calls
                       if c.name in stateful and c.queue == "q" and (c.name, c.attempt) not in may_overlap])


# --- marking -------------------------------------------------------------------------------

async def test_stateful_is_stored_from_a_job_a_batch_item_and_a_stateful_handler(env) -> None:
    e = await env()
    one = await e.enqueue("one", stateful=True)
    plain = await e.enqueue("plain")
    assert (one["stateful"], plain["stateful"]) == (True, False)
    batch = await e.api.post("/v1/jobs/batch", json={"jobs": [
        {"handler": "work", "payload": {"name": "b0"}, "stateful": True},
        {"handler": "work", "payload": {"name": "b1"}},
        {"handler": "work", "payload": {"name": "b2"}, "stateful": False},
    ]})
    assert batch.status_code == 201, batch.text
    assert [i["stateful"] for i in batch.json()["items"]] == [True, False, False]

    serial = await e.api.put("/v1/handlers/serial", json={"url": e.rec.url, "stateful": True})
    assert serial.status_code == 201 and serial.json()["stateful"] is True
    assert (await e.api.get("/v1/handlers/serial")).json()["stateful"] is True
    sent = await e.enqueue("to-serial", handler="serial")
    refused = await e.enqueue("to-serial-false", handler="serial", stateful=False)
    batch = await e.api.post("/v1/jobs/batch", json={"jobs": [
        {"handler": "serial", "payload": {"name": "sb0"}}, {"handler": "work", "payload": {"name": "sb1"}}]})
    assert (sent["stateful"], refused["stateful"]) == (True, True)
    assert [i["stateful"] for i in batch.json()["items"]] == [True, False]
    for job in (one, plain, sent):
        assert (await e.state(job["id"]))["stateful"] == job["stateful"]
    listed = (await e.api.get("/v1/executions", params={"handler": "serial"})).json()["items"]
    assert {i["stateful"] for i in listed} == {True}


@pytest.mark.parametrize("value", ["yes", 1, None])
async def test_stateful_must_be_a_boolean(env, value: Any) -> None:
    e = await env()
    response = await e.api.post("/v1/jobs", json={"handler": "work", "stateful": value})
    assert response.status_code == 422, response.text
    assert [err["field"] for err in response.json()["errors"]] == ["stateful"]


# --- hand-over: every way out of PROCESSING wakes the next stateful job ---------------------

async def test_after_a_success_the_next_stateful_job_runs_at_once_in_priority_order(env) -> None:
    e = await env()
    gate = e.rec.hold("s1")
    s1 = await e.enqueue("s1", stateful=True)
    await e.rec.started("s1")
    jobs = await queue_behind(e)

    released = time.monotonic()
    gate.set()
    assert (await e.rec.started("s3")).start - released < PROMPT
    await finish_in_order(e, {"s1": s1, **jobs}, [("s1", 0), ("s3", 0), ("s4", 0), ("s2", 0)])


async def test_after_a_failure_with_retry_the_next_stateful_job_runs_and_the_retry_waits_its_turn(env) -> None:
    e = await env()
    gate = e.rec.hold("s1")
    e.rec.replies["s1"] = [500, 200]
    s1 = await e.enqueue("s1", stateful=True, max_attempts=3)
    await e.rec.started("s1")
    jobs = await queue_behind(e)

    released = time.monotonic()
    gate.set()
    assert (await e.rec.started("s3")).start - released < PROMPT
    # The retry (attempt 1, due after its backoff) is newer than the waiting jobs: it goes last.
    await finish_in_order(e, {"s1": s1, **jobs}, [("s1", 0), ("s3", 0), ("s4", 0), ("s2", 0), ("s1", 1)])


async def test_after_a_dead_letter_the_next_stateful_job_runs_at_once(env) -> None:
    e = await env()
    gate = e.rec.hold("s1")
    e.rec.replies["s1"] = [500]
    s1 = await e.enqueue("s1", stateful=True, max_attempts=1)
    await e.rec.started("s1")
    jobs = await queue_behind(e)

    released = time.monotonic()
    gate.set()
    assert (await e.rec.started("s3")).start - released < PROMPT
    assert (await wait_for_state(e.api, s1["id"], "DEAD_LETTER"))["attempt"] == 0
    await finish_in_order(e, jobs, [("s1", 0), ("s3", 0), ("s4", 0), ("s2", 0)])


@pytest.mark.parametrize(("completion", "final"), [
    ({"outcome": "succeeded", "result": 1}, "SUCCEEDED"),
    ({"outcome": "failed", "retryable": False}, "DEAD_LETTER"),
    ({"outcome": "failed"}, "ENQUEUED"),
], ids=["succeeded", "failed-final", "failed-retry"])
async def test_an_accepted_stateful_job_holds_its_queue_until_its_completion_callback(
        env, completion: dict[str, Any], final: str) -> None:
    e = await env(retry_base_delay=60.0, retry_max_delay=60.0)
    e.rec.replies["s1"] = [202]
    s1 = await e.enqueue("s1", stateful=True, max_attempts=3)
    call = await e.rec.started("s1")
    jobs = await queue_behind(e)
    assert (await e.state(s1["id"]))["state"] == "PROCESSING"  # 202: still PROCESSING, held by the handler

    completed = time.monotonic()
    done = await e.api.post(f"{call.job['callback']['url']}/complete", json=completion,
                            headers={"authorization": f"Bearer {call.job['callback']['token']}"})
    assert done.status_code == 200, done.text
    assert done.json()["state"] == final
    assert (await e.rec.started("s3")).start - completed < PROMPT
    await finish_in_order(e, jobs, [("s1", 0), ("s3", 0), ("s4", 0), ("s2", 0)])


async def test_a_cancelled_stateful_job_frees_its_queue_while_its_handler_still_runs(env) -> None:
    e = await env()
    gate = e.rec.hold("s1")
    s1 = await e.enqueue("s1", stateful=True)
    first = await e.rec.started("s1")
    jobs = await queue_behind(e)

    cancelled = time.monotonic()
    response = await e.api.post(f"/v1/executions/{s1['id']}/cancel")
    assert response.status_code == 200 and response.json()["state"] == "CANCELLED"
    s3 = await e.rec.started("s3")
    assert s3.start - cancelled < PROMPT
    assert first.end is None  # cancellation is cooperative: the handler has not stopped yet

    gate.set()  # its late success does not undo the cancel
    await finish_in_order(e, jobs, [("s1", 0), ("s3", 0), ("s4", 0), ("s2", 0)], may_overlap=frozenset({("s1", 0)}))
    assert (await e.state(s1["id"]))["state"] == "CANCELLED"


async def test_a_stateful_call_open_at_its_deadline_is_abandoned_and_the_next_job_runs(env) -> None:
    # The dispatcher's own call deadline ends the attempt (ABANDONED, retried at once as attempt 1).
    e = await env()
    e.rec.hold("s1")
    s1 = await e.enqueue("s1", stateful=True, timeout_seconds=1.0)
    first = await e.rec.started("s1")
    jobs = await queue_behind(e)

    s3 = await e.rec.started("s3", timeout=5)
    assert s3.start - (first.start + 1.0) < PROMPT
    # Abandoned means Jobwire stopped waiting; the handler may still be busy with attempt 0.
    await finish_in_order(e, {"s1": s1, **jobs}, [("s1", 0), ("s3", 0), ("s4", 0), ("s2", 0), ("s1", 1)],
                          may_overlap=frozenset({("s1", 0)}))
    trail = [ev["new_state"] for ev in await events(e, s1["id"])]
    assert trail[:2] == ["ABANDONED", "ENQUEUED"]  # the insert and the claim write none (DESIGN §8)


async def test_a_silent_accepted_stateful_job_is_abandoned_by_the_scan_and_the_next_job_runs(env) -> None:
    e = await env(scan_interval=0.2)
    e.rec.replies["s1"] = [202]
    s1 = await e.enqueue("s1", stateful=True, timeout_seconds=1.0)
    first = await e.rec.started("s1")
    jobs = await queue_behind(e)

    s3 = await e.rec.started("s3", timeout=5)
    assert s3.start - (first.start + 1.0) < PROMPT
    await finish_in_order(e, {"s1": s1, **jobs}, [("s1", 0), ("s3", 0), ("s4", 0), ("s2", 0), ("s1", 1)])
    state = await e.state(s1["id"])
    assert (state["state"], state["attempt"]) == ("SUCCEEDED", 1)


async def events(e: Env, execution_id: str) -> list[dict[str, Any]]:
    db: Database = e.server.app.state.services.executions.db
    async with db.transaction() as conn:
        return await ExecutionRepository().events(conn, UUID(execution_id))


async def test_when_a_dead_nodes_stateful_job_is_recovered_the_next_job_runs_at_once(
        jobwire, handler: HandlerServer, db: Database) -> None:
    rec = Recorder()
    rec.url = handler.route("/work", rec.behaviour)
    async with db.transaction() as conn:
        await HandlerRepository().upsert(conn, name="work", url=rec.url, timeout_seconds=None, max_concurrency=None,
                                         stateful=False, new_secret=new_handler_secret())
    service = EnqueueService(db, EnqueueLimits(max_payload_bytes=1_048_576))
    specs = {"s1": (5, 0), "s2": (0, 1), "s3": (5, 2), "s4": (5, 3)}  # name: (priority, seconds after BASE)
    enqueued = await service.enqueue([
        NewJob(handler="work", job_id=name, queue="q", stateful=True, priority=p, payload={"name": name},
               run_at=BASE + timedelta(seconds=s)) for name, (p, s) in specs.items()])
    ids = {r.execution.job_id: str(r.execution.id) for r in enqueued}
    async with db.transaction() as conn:  # a node that then died claimed s1
        [claimed] = await ExecutionRepository().claim(conn, "dead-node-x", 10, [], default_timeout=600.0)
        assert claimed.job_id == "s1"
        await conn.execute("INSERT INTO job_server_heartbeats (server_id, last_heartbeat, started_at) "
                                "VALUES ('dead-node-x', now() - interval '1 hour', now() - interval '1 hour')")

    # The server's own scans would not call the node dead yet: only ours does.
    server = await jobwire(poll_interval=SLOW_POLL, heartbeat_timeout=7200.0, scan_interval=600.0)
    await asyncio.sleep(0.3)
    assert rec.calls == []  # s1 is PROCESSING on the dead node: its queue waits

    recovering = time.monotonic()
    scanner = settled_scanner(db, "scanner-z")
    assert (await scanner.recover_dead_nodes()).recovered == 1
    assert (await rec.started("s3")).start - recovering < PROMPT
    async with httpx.AsyncClient(base_url=server.url, timeout=10) as api:
        for execution_id in ids.values():
            await wait_for_state(api, execution_id, "SUCCEEDED")
    # The recovered s1 is due again from now: behind the older jobs of its priority.
    assert rec.order(set(specs)) == [("s3", 0), ("s4", 0), ("s1", 1), ("s2", 0)]
    assert_no_overlap(rec.calls)


# --- what is not held back -----------------------------------------------------------------

async def test_plain_jobs_of_a_queue_run_beside_its_stateful_job(env) -> None:
    e = await env()
    gate = e.rec.hold("s1")
    s1 = await e.enqueue("s1", stateful=True)
    first = await e.rec.started("s1")
    plain = [await e.enqueue(f"p{i}") for i in range(3)]
    for job in plain:
        await wait_for_state(e.api, job["id"], "SUCCEEDED")
    assert first.end is None and (await e.state(s1["id"]))["state"] == "PROCESSING"
    assert all(overlaps(first, e.rec.of(f"p{i}")) for i in range(3))  # type: ignore[arg-type]
    gate.set()
    await wait_for_state(e.api, s1["id"], "SUCCEEDED")


async def test_stateful_jobs_of_different_queues_run_in_parallel(env) -> None:
    e = await env()
    gates = [e.rec.hold(f"s-{q}") for q in ("qa", "qb", "qc")]
    jobs = [await e.enqueue(f"s-{q}", queue=q, stateful=True) for q in ("qa", "qb", "qc")]
    calls = [await e.rec.started(f"s-{q}") for q in ("qa", "qb", "qc")]
    assert all(c.end is None for c in calls)  # all three at once
    for gate in gates:
        gate.set()
    for job in jobs:
        await wait_for_state(e.api, job["id"], "SUCCEEDED")


async def test_a_paused_queue_keeps_its_stateful_jobs_and_resume_hands_over_at_once(env) -> None:
    e = await env()
    assert (await e.api.post("/v1/queues/q/pause")).status_code == 200
    s1 = await e.enqueue("s1", stateful=True)
    p1 = await e.enqueue("p1")
    await asyncio.sleep(0.3)
    assert e.rec.calls == []
    resumed = time.monotonic()
    assert (await e.api.post("/v1/queues/q/resume")).status_code == 200
    assert (await e.rec.started("s1")).start - resumed < PROMPT
    assert (await e.rec.started("p1")).start - resumed < PROMPT
    for job in (s1, p1):
        await wait_for_state(e.api, job["id"], "SUCCEEDED")


# --- max_concurrency -----------------------------------------------------------------------

class Concurrency:
    """Counts the calls a handler holds at once: a call from its start (after its claim
    committed) until just before its outcome is sent (before that outcome can commit)."""

    def __init__(self) -> None:
        self.now = 0
        self.most = 0

    def enter(self) -> None:
        self.now += 1
        self.most = max(self.most, self.now)

    def leave(self) -> None:
        self.now -= 1


async def test_two_servers_never_exceed_a_handlers_max_concurrency(jobwire, handler: HandlerServer) -> None:
    seen = Concurrency()
    nodes: set[str] = set()

    async def work(_: web.Request, job: dict[str, Any]) -> web.StreamResponse:
        seen.enter()
        nodes.add(job["callback"]["url"].split("/v1/")[0])  # which node called
        await asyncio.sleep(random.uniform(0.04, 0.12))
        seen.leave()
        return web.json_response({"result": 1})

    one = await jobwire(node_name="one", poll_interval=0.1)
    two = await jobwire(node_name="two", poll_interval=0.1)
    async with httpx.AsyncClient(base_url=one.url, timeout=10) as api:
        await register(api, "limited", handler.route("/limited", work), max_concurrency=2)
        await register(api, "free", handler.route("/free", work))
        # Enough jobs that both servers claim some, however slow this machine is today.
        batch = await api.post("/v1/jobs/batch", json={"jobs": [{"handler": "limited"} for _ in range(40)]})
        ids = [i["id"] for i in batch.json()["items"]]
        for execution_id in ids:
            await wait_for_state(api, execution_id, "SUCCEEDED", timeout=40)
    assert seen.most == 2
    assert nodes == {one.url, two.url}  # both servers took part


async def test_an_accepted_call_holds_its_slot_until_completed(jobwire, handler: HandlerServer) -> None:
    seen = Concurrency()
    completions: list[asyncio.Task[None]] = []

    async def complete_later(job: dict[str, Any]) -> None:
        await asyncio.sleep(0.15)
        seen.leave()  # before the completion can commit
        async with httpx.AsyncClient(timeout=10) as client:
            done = await client.post(f"{job['callback']['url']}/complete", json={"outcome": "succeeded"},
                                     headers={"authorization": f"Bearer {job['callback']['token']}"})
        assert done.status_code == 200, done.text

    async def accept(_: web.Request, job: dict[str, Any]) -> web.StreamResponse:
        seen.enter()
        completions.append(asyncio.create_task(complete_later(job)))
        return web.json_response({}, status=202)

    one = await jobwire(node_name="one", poll_interval=0.1)
    await jobwire(node_name="two", poll_interval=0.1)
    async with httpx.AsyncClient(base_url=one.url, timeout=10) as api:
        await register(api, "limited", handler.route("/accepting", accept), max_concurrency=2)
        batch = await api.post("/v1/jobs/batch", json={"jobs": [{"handler": "limited"} for _ in range(10)]})
        for item in batch.json()["items"]:
            await wait_for_state(api, item["id"], "SUCCEEDED", timeout=20)
    await asyncio.gather(*completions)
    assert seen.most == 2


async def test_a_freed_slot_of_a_limited_handler_is_taken_at_once(env) -> None:
    e = await env(handler_options={"max_concurrency": 1})
    gate = e.rec.hold("l0")
    first = await e.enqueue("l0")
    await e.rec.started("l0")
    second = await e.enqueue("l1")
    await asyncio.sleep(0.3)
    assert e.rec.of("l1") is None  # the handler's only slot is taken
    released = time.monotonic()
    gate.set()
    assert (await e.rec.started("l1")).start - released < PROMPT
    for job in (first, second):
        await wait_for_state(e.api, job["id"], "SUCCEEDED")
