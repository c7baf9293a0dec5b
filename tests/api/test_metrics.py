"""GET /metrics (DESIGN §4): Prometheus text, no API key, the queues' depth as the database sees
it, and this node's counters of enqueues, claims, handler calls and completion callbacks."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from aiohttp import web

from app.db.database import Database
from app.db.statements import execute
from tests.conftest import HandlerServer, RunningServer, register, settings_for, start_server, wait_for_state

SAMPLE = re.compile(r'^(?P<name>[a-z_]+)(\{(?P<labels>[^}]*)\})? (?P<value>-?[0-9.e+]+)$')


def parse(body: str) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    """Every sample, keyed by (name, labels); checks each family is declared before its samples."""
    declared: set[str] = set()
    samples: dict[tuple[str, frozenset[tuple[str, str]]], float] = {}
    for line in body.splitlines():
        if line.startswith("# TYPE "):
            _, _, name, kind = line.split(" ")
            assert kind in ("gauge", "counter")
            declared.add(name)
        elif line and not line.startswith("# HELP "):
            match = SAMPLE.match(line)
            assert match, line
            assert match["name"] in declared, line
            labels = frozenset(re.findall(r'(\w+)="([^"]*)"', match["labels"] or ""))
            samples[(match["name"], labels)] = float(match["value"])
    return samples


def value(samples: dict, name: str, **labels: str) -> float | None:
    return samples.get((name, frozenset(labels.items())))


async def scrape(client: httpx.AsyncClient) -> dict:
    response = await client.get("/metrics")
    assert response.status_code == 200, response.text
    assert response.headers["content-type"] == "text/plain; version=0.0.4; charset=utf-8"
    return parse(response.text)


async def insert(db: Database, queue: str, state: str, *, age: float = 0.0, n: int = 1) -> None:
    async with db.transaction() as conn:
        await execute(conn, """
            INSERT INTO job_executions (job_id, job_type, handler, queue, state, scheduled_at)
            SELECT 'j-' || g, 'DELAYED', 'h', :queue, :state, now() - make_interval(secs => :age)
            FROM generate_series(1, :n) AS g""", queue=queue, state=state, age=age, n=n)


@pytest.fixture
async def keyed_server(database_url: str, db: Database) -> AsyncIterator[RunningServer]:
    server = await start_server(settings_for(database_url, api_keys=["k-1"]), background=False)
    yield server
    await server.stop()


async def test_metrics_need_no_api_key_while_the_api_does(keyed_server: RunningServer) -> None:
    async with httpx.AsyncClient(base_url=keyed_server.url, timeout=10) as client:
        assert (await client.get("/v1/queues")).status_code == 401
        samples = await scrape(client)
    assert value(samples, "jobwire_handler_calls_in_flight") == 0
    assert value(samples, "jobwire_jobs_enqueued_total") == 0
    assert [k for k in samples if k[0] == "jobwire_node_info"] != []


async def test_queue_depth_counts_due_scheduled_processing_and_dead_lettered_jobs(
    keyed_server: RunningServer, db: Database
) -> None:
    await insert(db, "m-a", "ENQUEUED", age=30, n=3)
    await insert(db, "m-a", "ENQUEUED", age=-3600)  # due in an hour
    await insert(db, "m-a", "PROCESSING", n=2)
    await insert(db, "m-a", "DEAD_LETTER")
    await insert(db, "m-a", "SUCCEEDED", n=5)  # history: not a gauge here
    await insert(db, "m-b", "PROCESSING")
    async with db.transaction() as conn:
        await conn.execute("INSERT INTO job_queues (name, paused) VALUES ('m-b', true), ('m-c', true)")

    async with httpx.AsyncClient(base_url=keyed_server.url, timeout=10) as client:
        samples = await scrape(client)

    def jobs(queue: str, state: str) -> float | None:
        return value(samples, "jobwire_queue_jobs", queue=queue, state=state)

    assert [jobs("m-a", s) for s in ("enqueued_due", "enqueued_scheduled", "processing", "dead_letter")] == [
        3, 1, 2, 1]
    assert [jobs("m-b", s) for s in ("enqueued_due", "enqueued_scheduled", "processing", "dead_letter")] == [
        0, 0, 1, 0]
    assert jobs("m-c", "enqueued_due") == 0  # a paused queue with nothing in it is still listed
    assert 30 <= value(samples, "jobwire_queue_oldest_due_age_seconds", queue="m-a") < 90  # type: ignore[operator]
    assert value(samples, "jobwire_queue_oldest_due_age_seconds", queue="m-b") is None
    assert [value(samples, "jobwire_queue_paused", queue=q) for q in ("m-a", "m-b", "m-c")] == [0, 1, 1]


async def test_counters_follow_this_nodes_enqueues_claims_calls_and_callbacks(
    api: httpx.AsyncClient, handler: HandlerServer
) -> None:
    async def accept(_: web.Request, job: dict[str, Any]) -> web.StreamResponse:
        return web.Response(status=202)

    async def refuse(_: web.Request, job: dict[str, Any]) -> web.StreamResponse:
        return web.Response(status=400, text="no")

    async def succeed(_: web.Request, job: dict[str, Any]) -> web.StreamResponse:
        return web.json_response({"result": 1})

    await register(api, "ok", handler.route("/ok", succeed))
    await register(api, "later", handler.route("/later", accept))
    await register(api, "bad", handler.route("/bad", refuse))
    ids = [(await api.post("/v1/jobs", json={"handler": name, **extra})).json()["id"]
           for name, extra in (("ok", {}), ("ok", {}), ("later", {}), ("bad", {"max_attempts": 1}))]
    await wait_for_state(api, ids[0], "SUCCEEDED")
    await wait_for_state(api, ids[1], "SUCCEEDED")
    await wait_for_state(api, ids[3], "DEAD_LETTER")
    await handler.wait_for(4)
    later = next(job for job in handler.received if job["execution_id"] == ids[2])
    done = await api.post(f"/v1/executions/{ids[2]}/complete", json={"outcome": "succeeded"},
                          headers={"authorization": f"Bearer {later['callback']['token']}"})
    assert done.status_code == 200, done.text

    samples = await scrape(api)
    assert value(samples, "jobwire_jobs_enqueued_total") == 4
    assert value(samples, "jobwire_jobs_claimed_total") == 4
    assert value(samples, "jobwire_claims_total") >= 1  # type: ignore[operator]
    assert [value(samples, "jobwire_handler_calls_total", outcome=o)
            for o in ("succeeded", "accepted", "failed", "abandoned")] == [2, 1, 1, 0]
    assert [value(samples, "jobwire_callback_completions_total", outcome=o) for o in ("succeeded", "failed")] == [
        1, 0]
