"""Flow control with real `jobwire serve` nodes on one database and a real handler that records
every call (issue 22): from the handler's own timeline, never more than key_concurrency calls of
one key at once across three nodes; a rate limit spreads its calls; a Retry-After holds the
handler and spends no attempt of the jobs held back; the circuit opens, lets one probe through
and closes; an adaptive handler settles below what the server takes and ramps up again; pausing
one key leaves the others running.
"""

from __future__ import annotations

import asyncio
import collections
import random
import statistics
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import asyncpg
import httpx
import pytest
from aiohttp import web

from tests.cluster.processes import connect, handler_server, serve_nodes, terminate, wait_all_ready

pytestmark = pytest.mark.cluster

Handle = Callable[["Call", dict[str, Any]], Awaitable[web.Response]]


@dataclass
class Call:
    execution_id: str
    key: str | None
    node: str
    start: float
    end: float = float("inf")


@dataclass
class Recorder:
    """The handler's timeline: every call, and how many were in flight, overall and per key."""

    calls: list[Call] = field(default_factory=list)
    in_flight: int = 0
    most_in_flight: int = 0
    per_key: collections.Counter[str] = field(default_factory=collections.Counter)
    most_per_key: collections.Counter[str] = field(default_factory=collections.Counter)

    def concurrent_at(self, t: float) -> int:
        return sum(1 for c in self.calls if c.start <= t < c.end)


@dataclass
class Cluster:
    api: httpx.AsyncClient
    db: asyncpg.Connection
    url: str  # the handler's

    async def states(self) -> dict[str, int]:
        return dict(await self.db.fetch("SELECT state, count(*) FROM job_executions GROUP BY state"))

    async def until_all(self, state: str, total: int, timeout: float = 60) -> dict[str, int]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if (await self.states()).get(state) == total:
                break
            await asyncio.sleep(0.05)
        return await self.states()

    async def enqueue(self, jobs: list[dict[str, Any]]) -> None:
        created = await self.api.post("/v1/jobs/batch", json={"jobs": jobs})
        assert created.status_code == 201, created.text


@asynccontextmanager
async def cluster(tmp_path: Path, fresh_database: Callable[[], Awaitable[str]], recorder: Recorder, reply: Handle,
                  nodes: int = 3, **handler: Any) -> AsyncIterator[Cluster]:
    """`nodes` nodes (8 slots each, polling every 0.5 s) and a handler `h` answering with `reply`."""
    url = await fresh_database()

    async def handle(request: web.Request) -> web.Response:
        job = await request.json()
        call = Call(job["execution_id"], (job.get("payload") or {}).get("key"), job["callback"]["url"].split("/v1/")[0],
                    time.monotonic())
        recorder.calls.append(call)
        recorder.in_flight += 1
        recorder.most_in_flight = max(recorder.most_in_flight, recorder.in_flight)
        if call.key is not None:
            recorder.per_key[call.key] += 1
            recorder.most_per_key[call.key] = max(recorder.most_per_key[call.key], recorder.per_key[call.key])
        try:
            return await reply(call, job)
        finally:
            call.end = time.monotonic()  # before the reply is sent: its outcome commits after this
            recorder.in_flight -= 1
            if call.key is not None:
                recorder.per_key[call.key] -= 1

    runner, handler_url = await handler_server("/h", handle)
    env = {"JOBWIRE_DATABASE_URL": url, "JOBWIRE_POLL_INTERVAL": "0.5", "JOBWIRE_CONCURRENCY": "8",
           "JOBWIRE_HEARTBEAT_INTERVAL": "0.5", "JOBWIRE_EXECUTION_TIMEOUT": "60", "JOBWIRE_RETRY_BASE_DELAY": "0.2"}
    started = serve_nodes(("alpha", "bravo", "charlie")[:nodes], env, tmp_path)
    db = None
    try:
        await wait_all_ready(started)
        db = await connect(url)
        async with httpx.AsyncClient(base_url=started[0][1], timeout=30) as api:
            registered = await api.put("/v1/handlers/h", json={"url": handler_url, **handler})
            assert registered.status_code == 201, registered.text
            yield Cluster(api, db, handler_url)
    finally:
        if db is not None:
            await db.close()
        codes = [terminate(p) for p, _, _ in started]
        await runner.cleanup()
    assert codes == [0] * nodes


def job(i: int, key: str | None = None, **extra: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"handler": "h", "payload": {"i": i, "key": key}, **extra}
    if key is not None:
        body["concurrency_key"] = key
    return body


async def ok_after(seconds: tuple[float, float]) -> web.Response:
    await asyncio.sleep(random.uniform(*seconds))
    return web.json_response({"result": "ok"})


async def test_never_more_than_key_concurrency_calls_of_a_key_across_three_nodes(tmp_path, fresh_database):
    recorder = Recorder()

    async def reply(call: Call, body: dict[str, Any]) -> web.Response:
        # The first calls are held until a second node has calls too (at most 5 s): a node holds
        # 8 calls at most, so the others claim the rest, and the limit is checked across nodes
        # even on a loaded machine where one node could otherwise claim everything in turn.
        for _ in range(100):
            if len({c.node for c in recorder.calls}) >= 2:
                break
            await asyncio.sleep(0.05)
        return await ok_after((0.05, 0.15))

    async with cluster(tmp_path, fresh_database, recorder, reply, key_concurrency=2) as c:
        jobs = [job(i, f"customer:{i % 5}") for i in range(60)] + [job(100 + i) for i in range(10)]
        await c.enqueue(jobs)
        states = await c.until_all("SUCCEEDED", len(jobs))
    assert states == {"SUCCEEDED": len(jobs)}
    assert collections.Counter(c.execution_id for c in recorder.calls).most_common(1)[0][1] == 1
    assert max(recorder.most_per_key.values()) == 2, recorder.most_per_key  # reached, never passed
    assert recorder.most_in_flight > 2  # keys ran beside each other, and keyless jobs beside them
    assert len({c.node for c in recorder.calls}) >= 2


async def test_a_rate_limit_of_five_a_second_spreads_twenty_calls(tmp_path, fresh_database):
    recorder = Recorder()

    async def reply(call: Call, body: dict[str, Any]) -> web.Response:
        return web.json_response({"result": "ok"})

    async with cluster(tmp_path, fresh_database, recorder, reply, nodes=2,
                       rate_limit={"limit": 5, "period_seconds": 1}) as c:
        await c.enqueue([job(i) for i in range(20)])
        states = await c.until_all("SUCCEEDED", 20)
        attempts = await c.db.fetchval("SELECT max(attempt) FROM job_executions")
        claimed = [r["started_at"] for r in await c.db.fetch("SELECT started_at FROM job_executions ORDER BY 1")]
    assert states == {"SUCCEEDED": 20} and attempts == 0  # held back, never failed
    starts = sorted(call.start for call in recorder.calls)
    span = starts[-1] - starts[0]
    assert span >= 3.5, span
    # ≤ 5 starts in any second, by the claims' own times (the database's; arrivals at the handler jitter)
    assert all((claimed[i + 5] - claimed[i]).total_seconds() >= 0.99 for i in range(len(claimed) - 5)), claimed
    print(f"\n20 calls at 5/s over {span:.2f} s: {19 / span:.2f} a second")


async def test_a_retry_after_stops_calls_to_the_handler_and_spends_no_attempt_of_the_jobs_held_back(
        tmp_path, fresh_database):
    recorder = Recorder()
    refused: list[float] = []

    async def reply(call: Call, body: dict[str, Any]) -> web.Response:
        if not refused:
            refused.append(time.monotonic())
            return web.json_response({"error": "slow down"}, status=429, headers={"Retry-After": "2"})
        return web.json_response({"result": "ok"})

    async with cluster(tmp_path, fresh_database, recorder, reply, nodes=2) as c:
        await c.enqueue([job(0)])
        # Once the refused attempt is recorded, the hold is too (the reply's flow state is written
        # first); calls claimed between the reply and its recording were out before it.
        while await c.db.fetchval("SELECT attempt FROM job_executions") != 1:
            await asyncio.sleep(0.01)
        await c.enqueue([job(i) for i in range(1, 10)])
        states = await c.until_all("SUCCEEDED", 10)
        attempts = dict(await c.db.fetch("SELECT attempt, count(*) FROM job_executions GROUP BY attempt"))
    assert states == {"SUCCEEDED": 10}
    later = [call.start for call in recorder.calls if call.start > refused[0]]
    assert min(later) - refused[0] >= 1.9, later  # nothing went out for the 2 s asked
    assert attempts == {0: 9, 1: 1}  # only the refused call was an attempt


async def test_the_circuit_opens_after_five_failures_then_one_probe_closes_it(tmp_path, fresh_database):
    recorder = Recorder()

    async def reply(call: Call, body: dict[str, Any]) -> web.Response:
        if len(recorder.calls) <= 5:
            return web.json_response({"error": "down"}, status=500)
        await asyncio.sleep(0.2)  # the probe takes a while: nothing else may start meanwhile
        return web.json_response({"result": "ok"})

    async with cluster(tmp_path, fresh_database, recorder, reply, nodes=2) as c:
        await c.enqueue([job(i, max_attempts=1) for i in range(5)])
        while (await c.api.get("/v1/handlers/h")).json()["circuit"]["state"] != "open":
            await asyncio.sleep(0.01)
        await c.enqueue([job(i) for i in range(5, 20)])
        states = await c.until_all("SUCCEEDED", 15)
        circuit = (await c.api.get("/v1/handlers/h")).json()["circuit"]
    assert states == {"SUCCEEDED": 15, "DEAD_LETTER": 5}
    calls = sorted(recorder.calls, key=lambda call: call.start)
    fifth, probe, after = calls[4], calls[5], calls[6]
    assert probe.start - fifth.end >= 0.9, (fifth, probe)  # open: no calls for 1 s
    assert after.start >= probe.end, (probe, after)  # half open: the probe alone, until its success
    assert circuit == {"state": "closed", "until": None, "failures": 0}


async def test_an_adaptive_handler_settles_below_what_the_server_takes_and_ramps_up_again(tmp_path, fresh_database):
    recorder = Recorder()
    capacity = [3]
    refusals = [0]

    async def reply(call: Call, body: dict[str, Any]) -> web.Response:
        if recorder.in_flight > capacity[0]:
            refusals[0] += 1
            return web.json_response({"error": "busy"}, status=429)
        return await ok_after((0.05, 0.1))

    async with cluster(tmp_path, fresh_database, recorder, reply, nodes=2, max_concurrency=16, adaptive=True) as c:
        await c.enqueue([job(i) for i in range(150)])
        limits: list[int] = []  # the effective limit, sampled once slow start is over

        async def sample() -> None:
            while True:
                if len(recorder.calls) > 40:
                    limits.append((await c.api.get("/v1/handlers/h")).json()["adaptive"]["limit"])
                await asyncio.sleep(0.05)

        sampler = asyncio.create_task(sample())
        try:
            states = await c.until_all("SUCCEEDED", 150, timeout=90)
        finally:
            sampler.cancel()
        attempts = await c.db.fetchval("SELECT max(attempt) FROM job_executions")
        before = len(recorder.calls)
        most_before = recorder.most_in_flight

        capacity[0] = 12  # the server takes more now
        recorder.most_in_flight = 0
        await c.enqueue([job(i) for i in range(150, 450)])
        ramped = await c.until_all("SUCCEEDED", 450, timeout=90)
        grown = (await c.api.get("/v1/handlers/h")).json()["adaptive"]["limit"]
    assert states == {"SUCCEEDED": 150} and ramped == {"SUCCEEDED": 450}
    assert attempts == 0  # refusals went back with their attempt: nothing failed, nothing dead-lettered
    # AIMD settles at what the server takes: it probes one above (4), is refused, halves, grows back.
    assert limits and statistics.median(limits) <= 3 and max(limits) <= 4, limits
    assert grown > 3 and recorder.most_in_flight > 3, (grown, recorder.most_in_flight)
    print(f"\nadaptive: limit median {statistics.median(limits)} at capacity 3 ({refusals[0]} refusals, {before} "
          f"calls, at most {most_before} at once), then {grown} at capacity 12 ({recorder.most_in_flight} at once)")


async def test_pausing_one_key_leaves_the_others_running(tmp_path, fresh_database):
    recorder = Recorder()

    async def reply(call: Call, body: dict[str, Any]) -> web.Response:
        return web.json_response({"result": "ok"})

    async with cluster(tmp_path, fresh_database, recorder, reply, nodes=2) as c:
        assert (await c.api.post("/v1/handlers/h/keys/acme/pause")).status_code == 200
        await c.enqueue([job(i, "acme") for i in range(5)] + [job(i, "globex") for i in range(5, 10)])
        await c.until_all("SUCCEEDED", 5)
        await asyncio.sleep(1.0)  # two polls: still nothing of the paused key
        held = await c.states()
        keys = (await c.api.get("/v1/handlers/h/keys", params={"state": "paused"})).json()["items"]
        assert (await c.api.post("/v1/handlers/h/keys/acme/resume")).status_code == 200
        done = await c.until_all("SUCCEEDED", 10)
    assert held == {"SUCCEEDED": 5, "ENQUEUED": 5}
    assert [(k["key"], k["waiting"], k["paused"]) for k in keys] == [("acme", 5, True)]
    assert done == {"SUCCEEDED": 10}
    assert {call.key for call in recorder.calls[:5]} == {"globex"}
