"""Workflows (issue 24) across real `jobwire serve` processes on one database.

1. Fan-in on two nodes: each node claims one queue only, and every child depends on parents of
   both queues, so two processes end parents of the same child in the same instant (the handler
   holds every parent until all are in flight, then answers them at once). Each child is released
   exactly once and dispatched exactly once, with its parents' results; the workflows end
   SUCCEEDED with the right counts.
2. kill -9 mid-workflow: a node dies while a 5-layer graph is half done; another node recovers
   the dead node's calls and the graph finishes SUCCEEDED. All the way through, sampled from
   outside: no job is WAITING while its parents are all terminal, and a workflow's counts are
   the real counts of its jobs by state.
"""

from __future__ import annotations

import asyncio
import collections
import json
import random
import signal
import time
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
from aiohttp import web

from tests.cluster.processes import connect, handler_server, serve_nodes, terminate, wait_all_ready
from tests.state_moves import MOVES, STATE_MOVES

pytestmark = pytest.mark.cluster

TERMINAL = ("SUCCEEDED", "DEAD_LETTER", "CANCELLED")

# A WAITING job none of whose parents is unfinished: the transition that ended its last parent
# should have settled it in the same transaction, so no snapshot may ever show one.
STRANDED = """
SELECT c.id::text, c.workflow_ref, c.pending_parents FROM job_executions c
WHERE c.state = 'WAITING' AND NOT EXISTS (
    SELECT 1 FROM job_dependencies d JOIN job_executions p ON p.id = d.parent_id
    WHERE d.child_id = c.id AND p.state NOT IN ('SUCCEEDED', 'DEAD_LETTER', 'CANCELLED'))
"""

# Each workflow's kept counts beside the real counts of its jobs, in one snapshot.
COUNTS = """
SELECT w.id::text, w.state, (SELECT COALESCE(jsonb_object_agg(k.state, k.n), '{}'::jsonb)
        FROM (SELECT y.state, sum(y.n) AS n
              FROM (SELECT c.key AS state, CAST(c.value AS int) AS n FROM jsonb_each_text(w.counts) c
                    UNION ALL  -- the moves appended beside the row, not folded in yet
                    SELECT d.state, d.n FROM job_workflow_deltas d WHERE d.workflow_id = w.id) AS y
              GROUP BY y.state HAVING sum(y.n) <> 0) AS k)::text AS kept,
       (SELECT COALESCE(jsonb_object_agg(s.state, s.n), '{}'::jsonb)::text
        FROM (SELECT e.state, count(*) AS n FROM job_executions e WHERE e.workflow_id = w.id GROUP BY e.state) s)
       AS real
FROM job_workflows w ORDER BY w.id
"""


@dataclass
class Call:
    execution_id: str
    attempt: int
    ref: str
    node: str  # the base URL of the node that made the call
    workflow: dict[str, Any]
    at: float


def nonzero(counts: dict[str, int]) -> dict[str, int]:
    return {state: n for state, n in counts.items() if n}


class Watch:
    """Samples the two invariants from outside while the nodes work; keeps every violation seen."""

    def __init__(self, conn: Any) -> None:  # an asyncpg connection
        self.conn = conn
        self.stranded: list[list[tuple[Any, ...]]] = []
        self.drift: list[tuple[str, dict[str, int], dict[str, int]]] = []
        self.samples = 0

    async def sample(self) -> list[dict[str, Any]]:
        stranded = [tuple(r) for r in await self.conn.fetch(STRANDED)]
        if stranded:
            self.stranded.append(stranded)
        rows = [dict(r) for r in await self.conn.fetch(COUNTS)]
        for row in rows:
            kept, real = nonzero(json.loads(row["kept"])), nonzero(json.loads(row["real"]))
            if kept != real:
                self.drift.append((row["id"], kept, real))
        self.samples += 1
        return rows

    async def until(self, done, timeout: float, what: str) -> list[dict[str, Any]]:  # noqa: ANN001
        deadline = time.monotonic() + timeout
        while True:
            rows = await self.sample()
            if done(rows):
                return rows
            if time.monotonic() > deadline:
                states = await self.conn.fetch("SELECT state, count(*) FROM job_executions GROUP BY state")
                raise AssertionError(f"{what} not in {timeout}s: workflows {rows}; jobs {[tuple(s) for s in states]}")
            await asyncio.sleep(0.02)


def all_ended(rows: list[dict[str, Any]]) -> bool:
    return bool(rows) and all(r["state"] != "RUNNING" for r in rows)


# 1. Fan-in on two nodes ----------------------------------------------------------------------------

WORKFLOWS = 2
PARENTS_PER_QUEUE = 25  # per workflow: 25 in "left" (node alpha), 25 in "right" (node bravo)
CHILDREN = 100  # per workflow: 200 fan-ins in all


def fan_in_graph(w: int) -> tuple[list[dict[str, Any]], dict[str, set[str]]]:
    """Parents l0..l24 (queue left), r0..r24 (queue right); child c<j> depends on one of each queue,
    every third child on a third parent too. Returns the jobs and each child's parents."""
    jobs: list[dict[str, Any]] = []
    for k in range(PARENTS_PER_QUEUE):  # interleaved: both nodes claim them in the same order
        for side in ("l", "r"):
            ref = f"{side}{k}"
            jobs.append({"ref": ref, "handler": "rec", "queue": "left" if side == "l" else "right",
                         "payload": {"kind": "parent", "ref": ref, "w": w}})
    parents: dict[str, set[str]] = {}
    n = PARENTS_PER_QUEUE
    for j in range(CHILDREN):
        ref = f"c{j}"
        mine = {f"l{j % n}", f"r{(j * 7 + w) % n}"}
        if j % 3 == 0:
            mine.add(f"l{(j + 12) % n}" if j % 2 else f"r{(j * 7 + w + 12) % n}")
        parents[ref] = mine
        jobs.append({"ref": ref, "handler": "rec", "queue": "left" if j % 2 else "right", "depends_on": sorted(mine),
                     "payload": {"kind": "child", "ref": ref, "w": w}})
    return jobs, parents


async def test_two_nodes_ending_parents_of_one_child_at_once_release_it_exactly_once(tmp_path, fresh_database):
    url = await fresh_database()
    calls: list[Call] = []
    gate = asyncio.Event()
    held = {"n": 0}

    async def handle(request: web.Request) -> web.Response:
        job = await request.json()
        payload = job["payload"]
        calls.append(Call(job["execution_id"], job["attempt"], payload["ref"], job["callback"]["url"].split("/v1/")[0],
                          job.get("workflow") or {}, time.monotonic()))
        if payload["kind"] == "parent":
            held["n"] += 1
            await gate.wait()
            # Spread over a few ms: many small batches of successes from both nodes interleave.
            await asyncio.sleep(random.uniform(0, 0.03))
        return web.json_response({"result": {"ref": payload["ref"], "w": payload["w"]}})

    runner, handler_url = await handler_server("/rec", handle)
    parents_total = WORKFLOWS * 2 * PARENTS_PER_QUEUE
    common = {"JOBWIRE_DATABASE_URL": url, "JOBWIRE_POLL_INTERVAL": "0.2", "JOBWIRE_CONCURRENCY": "64",
              "JOBWIRE_HEARTBEAT_INTERVAL": "0.5", "JOBWIRE_EXECUTION_TIMEOUT": "60"}
    nodes = [serve_nodes((name,), {**common, "JOBWIRE_QUEUES": queue}, tmp_path)[0]
             for name, queue in (("alpha", "left"), ("bravo", "right"))]
    conn = None
    try:
        await wait_all_ready(nodes)
        conn = await connect(url)
        # The insert and a workflow's release of a child write no event row (DESIGN §8): the rows'
        # own moves are recorded instead (tests/state_moves.py).
        await conn.execute(STATE_MOVES)
        watch = Watch(conn)
        async with httpx.AsyncClient(base_url=nodes[0][1], timeout=30) as api:
            assert (await api.put("/v1/handlers/rec", json={"url": handler_url})).status_code == 201
            made: dict[str, dict[str, Any]] = {}
            expected_parents: dict[str, dict[str, set[str]]] = {}
            for w in range(WORKFLOWS):
                jobs, parents = fan_in_graph(w)
                created = await api.post("/v1/workflows", json={"name": f"fan-in-{w}", "jobs": jobs})
                assert created.status_code == 201, created.text
                body = created.json()
                made[body["id"]] = body
                expected_parents[body["id"]] = parents
                assert collections.Counter(i["state"] for i in body["items"]) == {
                    "ENQUEUED": 2 * PARENTS_PER_QUEUE, "WAITING": CHILDREN}

            # Every parent in flight on its node, then all answered in the same instant.
            deadline = time.monotonic() + 20
            while held["n"] < parents_total:
                assert time.monotonic() < deadline, f"only {held['n']} of {parents_total} parents reached the handler"
                await watch.sample()
                await asyncio.sleep(0.02)
            gate.set()
            released_at = time.monotonic()
            rows = await watch.until(all_ended, 30, "the workflows ending")
            ended_in = time.monotonic() - released_at
            await asyncio.sleep(0.5)  # a second dispatch of a child would show up by now
            rows = await watch.sample()
            shown = {i: (await api.get(f"/v1/workflows/{i}")).json() for i in made}
            # Per job inserted WAITING (a child): how often its row moved to ENQUEUED after that.
            enqueued_moves = {str(r["execution_id"]): r["states"][1:].count("ENQUEUED")
                              for r in await conn.fetch(MOVES) if r["states"][0] == "WAITING"}
            insert_and_release_events = await conn.fetchval(
                "SELECT count(*) FROM job_events WHERE event->>'new_state' IN ('WAITING', 'ENQUEUED', 'PROCESSING')")
            parent_ends = await conn.fetch(
                "SELECT d.child_id::text AS child, max(p.completed_at) - min(p.completed_at) AS spread "
                "FROM job_dependencies d JOIN job_executions p ON p.id = d.parent_id GROUP BY d.child_id")
            states = dict(await conn.fetch("SELECT state, count(*) FROM job_executions GROUP BY state"))
    finally:
        if conn is not None:
            await conn.close()
        gate.set()
        codes = [terminate(p) for p, _, _ in nodes]
        await runner.cleanup()

    total = WORKFLOWS * (2 * PARENTS_PER_QUEUE + CHILDREN)
    assert states == {"SUCCEEDED": total}, states
    assert codes == [0, 0]
    assert watch.stranded == [], f"WAITING jobs whose parents were all terminal: {watch.stranded[:3]}"
    assert watch.drift == [], f"workflow counts drifted from the jobs: {watch.drift[:3]}"
    for row in rows:
        assert row["state"] == "SUCCEEDED" and nonzero(json.loads(row["kept"])) == {
            "SUCCEEDED": 2 * PARENTS_PER_QUEUE + CHILDREN}, row
    for body in shown.values():
        assert body["state"] == "SUCCEEDED" and body["counts"] == {"SUCCEEDED": 2 * PARENTS_PER_QUEUE + CHILDREN}, body

    # Every job dispatched exactly once: one call per execution, no (execution, attempt) twice.
    per_execution = collections.Counter(c.execution_id for c in calls)
    per_attempt = collections.Counter((c.execution_id, c.attempt) for c in calls)
    assert len(per_execution) == total
    assert [e for e, n in per_execution.items() if n > 1] == []
    assert [k for k, n in per_attempt.items() if n > 1] == []

    # Each child released exactly once (its row moved to ENQUEUED once after its WAITING insert; no
    # event row for either, nor for a claim: DESIGN §8) and dispatched with every parent's state and
    # result; its parents really ended on both nodes.
    assert insert_and_release_events == 0
    assert len(enqueued_moves) == WORKFLOWS * CHILDREN
    ids = {(wid, i["ref"]): i["execution_id"] for wid, body in made.items() for i in body["items"]}
    by_id = {c.execution_id: c for c in calls}
    node_of = {(wid, ref): by_id[ids[(wid, ref)]].node for (wid, ref) in ids}
    for workflow_id, parents in expected_parents.items():
        w = made[workflow_id]["name"].removeprefix("fan-in-")
        for child, mine in parents.items():
            execution = ids[(workflow_id, child)]
            assert enqueued_moves.get(execution) == 1, (child, enqueued_moves.get(execution))
            call = by_id[execution]
            assert call.workflow["id"] == workflow_id and call.workflow["ref"] == child
            assert call.workflow["parents"] == {
                p: {"execution_id": ids[(workflow_id, p)], "state": "SUCCEEDED", "result": {"ref": p, "w": int(w)}}
                for p in mine}, (child, call.workflow)
            assert len({node_of[(workflow_id, p)] for p in mine}) == 2, (child, mine)
            # The child is called only after its last parent answered.
            assert call.at >= released_at
    assert len({c.node for c in calls}) == 2

    spreads = sorted(r["spread"].total_seconds() for r in parent_ends if r["child"] in set(enqueued_moves))
    print(f"\nfan-in: {WORKFLOWS * CHILDREN} children released once each; parents of one child ended "
          f"{spreads[len(spreads) // 2] * 1000:.1f} ms apart (median; min {spreads[0] * 1000:.1f}, "
          f"max {spreads[-1] * 1000:.1f} ms); "
          f"all ended {ended_in:.2f}s after the parents' answers; {watch.samples} invariant samples")


# 2. kill -9 in the middle of a workflow ---------------------------------------------------------------

LAYERS = 5
WIDTH = 50
HEARTBEAT_TIMEOUT = 2.0
SCAN_INTERVAL = 0.5


def layered_graph() -> list[dict[str, Any]]:
    """Layer 0: 50 roots; each job of a later layer depends on two of the layer before."""
    jobs = []
    for layer in range(LAYERS):
        for i in range(WIDTH):
            depends = [] if layer == 0 else sorted({f"L{layer - 1}-{i}", f"L{layer - 1}-{(i * 3 + 1) % WIDTH}"})
            jobs.append({"ref": f"L{layer}-{i}", "handler": "rec", "depends_on": depends, "max_attempts": 5,
                         "payload": {"ref": f"L{layer}-{i}"}})
    return jobs


async def test_a_workflow_survives_kill_9_of_its_node_and_never_strands_a_job(tmp_path, fresh_database):
    url = await fresh_database()
    calls: list[Call] = []

    async def handle(request: web.Request) -> web.Response:
        job = await request.json()
        ref = job["payload"]["ref"]
        calls.append(Call(job["execution_id"], job["attempt"], ref, job["callback"]["url"].split("/v1/")[0],
                          job.get("workflow") or {}, time.monotonic()))
        await asyncio.sleep(random.uniform(0.05, 0.1))
        return web.json_response({"result": ref})

    runner, handler_url = await handler_server("/rec", handle)
    env = {"JOBWIRE_DATABASE_URL": url, "JOBWIRE_POLL_INTERVAL": "0.2", "JOBWIRE_CONCURRENCY": "10",
           "JOBWIRE_HEARTBEAT_INTERVAL": "0.3", "JOBWIRE_HEARTBEAT_TIMEOUT": str(HEARTBEAT_TIMEOUT),
           "JOBWIRE_SCAN_INTERVAL": str(SCAN_INTERVAL), "JOBWIRE_EXECUTION_TIMEOUT": "60",
           "JOBWIRE_RETRY_BASE_DELAY": "0.1", "JOBWIRE_RETRY_MAX_DELAY": "0.5"}
    [first] = serve_nodes(("alpha",), env, tmp_path)
    second = None
    conn = None
    try:
        await wait_all_ready([first])
        conn = await connect(url)
        watch = Watch(conn)
        async with httpx.AsyncClient(base_url=first[1], timeout=30) as api:
            assert (await api.put("/v1/handlers/rec", json={"url": handler_url})).status_code == 201
            created = await api.post("/v1/workflows", json={"name": "layers", "jobs": layered_graph()})
            assert created.status_code == 201, created.text
            made = created.json()
        ids = {i["ref"]: i["execution_id"] for i in made["items"]}

        # Kill the node without warning once the graph is well under way and it holds calls.
        deadline = time.monotonic() + 20
        while True:
            await watch.sample()
            counts = dict(await conn.fetch("SELECT state, count(*) FROM job_executions GROUP BY state"))
            if counts.get("SUCCEEDED", 0) >= WIDTH * 3 // 2 and counts.get("PROCESSING", 0) >= 5:
                break
            assert time.monotonic() < deadline, f"the workflow never got mid-way: {counts}"
            await asyncio.sleep(0.01)
        victim = await conn.fetchval("SELECT DISTINCT locked_by FROM job_executions WHERE state = 'PROCESSING'")
        first[0].send_signal(signal.SIGKILL)
        killed_at = time.monotonic()
        first[0].wait(10)
        held = {r["id"] for r in await conn.fetch(
            "SELECT id::text FROM job_executions WHERE state = 'PROCESSING' AND locked_by = $1", victim)}
        at_kill = dict(await conn.fetch(
            "SELECT state, count(*) FROM job_executions WHERE workflow_id = $1::uuid GROUP BY state", made["id"]))
        assert held, "the dead node held no call"

        [second] = serve_nodes(("bravo",), env, tmp_path)
        await wait_all_ready([second])
        rows = await watch.until(all_ended, 40, "the workflow ending after the kill")
        ended_in = time.monotonic() - killed_at
        stranded_now = await conn.fetch(STRANDED)
        kept = await conn.fetchrow("SELECT state, counts::text FROM job_workflows WHERE id = $1::uuid", made["id"])
        real = dict(await conn.fetch(
            "SELECT state, count(*) FROM job_executions WHERE workflow_id = $1::uuid GROUP BY state", made["id"]))
        abandoned = {r["id"] for r in await conn.fetch(
            "SELECT execution_id::text AS id FROM job_events WHERE type = 'execution.abandoned'")}
        async with httpx.AsyncClient(base_url=second[1], timeout=30) as api:
            shown = (await api.get(f"/v1/workflows/{made['id']}")).json()
    finally:
        if conn is not None:
            await conn.close()
        if first[0].poll() is None:
            first[0].kill()
        codes = [terminate(second[0])] if second is not None else []
        await runner.cleanup()

    total = LAYERS * WIDTH
    assert [tuple(r) for r in stranded_now] == []
    assert watch.stranded == [], f"WAITING jobs whose parents were all terminal: {watch.stranded[:3]}"
    assert watch.drift == [], f"workflow counts drifted from the jobs: {watch.drift[:3]}"
    assert nonzero(json.loads(kept["counts"])) == real == {"SUCCEEDED": total}, (kept, real)
    assert kept["state"] == "SUCCEEDED" and [r["state"] for r in rows] == ["SUCCEEDED"]
    assert shown["state"] == "SUCCEEDED" and shown["counts"] == {"SUCCEEDED": total}, shown
    assert codes == [0]

    # The dead node's calls were abandoned and run again; nothing else ran twice, no attempt twice.
    assert abandoned == held
    per_execution = collections.Counter(c.execution_id for c in calls)
    per_attempt = collections.Counter((c.execution_id, c.attempt) for c in calls)
    assert len(per_execution) == total
    assert [k for k, n in per_attempt.items() if n > 1] == []
    assert {e for e, n in per_execution.items() if n > 1} <= held
    # Every job was called with all its parents SUCCEEDED (a job runs after its whole layer above).
    depends = {j["ref"]: set(j["depends_on"]) for j in layered_graph()}
    for call in calls:
        parents = call.workflow["parents"]
        assert set(parents) == depends[call.ref], call
        assert all(p == {"execution_id": ids[ref], "state": "SUCCEEDED", "result": ref}
                   for ref, p in parents.items()), call
    print(f"\nkill -9 at {at_kill}: {len(held)} calls held by the dead node, abandoned and run again; "
          f"the workflow ended SUCCEEDED {ended_in:.2f}s after the kill; {watch.samples} invariant samples")
