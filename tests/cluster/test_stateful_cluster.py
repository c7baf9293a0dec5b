"""Three `jobwire serve` nodes on one database share stateful queues (DESIGN §6.4).

From the handler's own timeline: no two stateful calls of one queue overlap, whichever nodes
made them; stateful calls of different queues do run at once; non-stateful calls of a queue run
beside its stateful ones; every job ends SUCCEEDED, each dispatched once.
"""

from __future__ import annotations

import asyncio
import collections
import random
import time
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
from aiohttp import web

from tests.cluster.processes import connect, handler_server, serve_nodes, terminate, wait_all_ready

pytestmark = pytest.mark.cluster

QUEUES = ("ledger-a", "ledger-b")
STATEFUL_PER_QUEUE = 20
PLAIN_PER_QUEUE = 20


@dataclass
class Call:
    execution_id: str
    queue: str
    stateful: bool
    node: str
    start: float
    end: float = float("inf")


def overlap(a: Call, b: Call) -> bool:
    return a.start < b.end and b.start < a.end


async def test_stateful_jobs_of_one_queue_never_overlap_across_three_nodes(tmp_path, fresh_database):
    url = await fresh_database()
    calls: list[Call] = []

    async def handle(request: web.Request) -> web.Response:
        job = await request.json()
        call = Call(job["execution_id"], job["queue"], job["payload"]["stateful"],
                    job["callback"]["url"].split("/v1/")[0], time.monotonic())
        calls.append(call)
        await asyncio.sleep(random.uniform(0.05, 0.15))
        call.end = time.monotonic()  # before the reply: the success commits after this
        return web.json_response({"result": job["payload"]})

    runner, handler_url = await handler_server("/record", handle)
    env = {
        "JOBWIRE_DATABASE_URL": url,
        "JOBWIRE_POLL_INTERVAL": "0.5",
        "JOBWIRE_CONCURRENCY": "8",
        "JOBWIRE_HEARTBEAT_INTERVAL": "0.5",
        "JOBWIRE_EXECUTION_TIMEOUT": "60",
    }
    nodes = serve_nodes(("alpha", "bravo", "charlie"), env, tmp_path)
    conn = None
    samples: list[dict[str, int]] = []
    try:
        await wait_all_ready(nodes)
        conn = await connect(url)
        async with httpx.AsyncClient(base_url=nodes[0][1], timeout=30) as api:
            registered = await api.put("/v1/handlers/record", json={"url": handler_url})
            assert registered.status_code == 201, registered.text
            jobs: list[dict[str, Any]] = []
            for i in range(max(STATEFUL_PER_QUEUE, PLAIN_PER_QUEUE)):
                for queue in QUEUES:
                    if i < STATEFUL_PER_QUEUE:
                        jobs.append({"handler": "record", "queue": queue, "stateful": True,
                                     "payload": {"stateful": True, "i": i}})
                    if i < PLAIN_PER_QUEUE:
                        jobs.append({"handler": "record", "queue": queue, "payload": {"stateful": False, "i": i}})
            created = await api.post("/v1/jobs/batch", json={"jobs": jobs})
            assert created.status_code == 201, created.text
            total = len(jobs)

            deadline = time.monotonic() + 60
            done = 0
            while time.monotonic() < deadline:
                samples.append(dict(await conn.fetch(
                    "SELECT queue, count(*) FROM job_executions WHERE stateful AND state = 'PROCESSING' "
                    "GROUP BY queue")))
                done = await conn.fetchval("SELECT count(*) FROM job_executions WHERE state = 'SUCCEEDED'")
                if done == total:
                    break
                await asyncio.sleep(0.01)
            states = dict(await conn.fetch("SELECT state, count(*) FROM job_executions GROUP BY state"))
    finally:
        if conn is not None:
            await conn.close()
        codes = [terminate(p) for p, _, _ in nodes]
        await runner.cleanup()

    assert states == {"SUCCEEDED": total}, states
    assert codes == [0, 0, 0]
    dispatched = collections.Counter(c.execution_id for c in calls)
    assert len(dispatched) == total and set(dispatched.values()) == {1}

    stateful = {q: sorted((c for c in calls if c.stateful and c.queue == q), key=lambda c: c.start) for q in QUEUES}
    plain = [c for c in calls if not c.stateful]
    for queue, run in stateful.items():
        assert len(run) == STATEFUL_PER_QUEUE
        for before, after in zip(run, run[1:], strict=False):
            assert before.end <= after.start, f"{queue}: two stateful calls overlapped ({before}, {after})"
    assert any(overlap(a, b) for a in stateful[QUEUES[0]] for b in stateful[QUEUES[1]]), \
        "the two queues' stateful jobs never ran at once"
    assert any(overlap(p, s) for p in plain for s in stateful[p.queue]), \
        "no non-stateful call ran beside a stateful one of its queue"
    # The hand-overs really crossed nodes: the guarantee held between processes, not within one.
    assert len({c.node for run in stateful.values() for c in run}) >= 2
    assert [s for s in samples if any(n > 1 for n in s.values())] == []
    print(f"\nstateful calls per node: {collections.Counter(c.node for r in stateful.values() for c in r)}; "
          f"{len(samples)} samples")
