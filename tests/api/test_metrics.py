"""GET /metrics (DESIGN §4), read with prometheus_client's parser: no API key; every state of every
queue that has live rows, a pause flag or a schedule (0 included), as the database sees it; this
node's counters of enqueues, claims, handler calls by handler, queue and outcome, and completion
callbacks; histograms of handler-call durations by handler and of queue wait by queue."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from aiohttp import web
from prometheus_client.parser import text_string_to_metric_families

from app.db.database import Database
from app.db.statements import execute
from tests.conftest import HandlerServer, RunningServer, register, settings_for, start_server, wait_for_state

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]
STATES = ("enqueued_due", "enqueued_scheduled", "processing", "dead_letter")
OUTCOMES = ("succeeded", "accepted", "failed", "abandoned")


def parse(body: str) -> Samples:
    """Every sample, keyed by (name, labels), as Prometheus's own client library parses the text."""
    return {(s.name, frozenset(s.labels.items())): s.value
            for family in text_string_to_metric_families(body) for s in family.samples}


def value(samples: Samples, name: str, **labels: str) -> float | None:
    return samples.get((name, frozenset(labels.items())))


async def scrape(client: httpx.AsyncClient) -> Samples:
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

    def jobs(queue: str) -> list[float | None]:
        return [value(samples, "jobwire_queue_jobs", queue=queue, state=s) for s in STATES]

    assert jobs("m-a") == [3, 1, 2, 1]
    assert jobs("m-b") == [0, 0, 1, 0]
    assert jobs("m-c") == [0, 0, 0, 0]  # a paused queue with nothing in it is listed, every state at 0
    assert 30 <= value(samples, "jobwire_queue_oldest_due_age_seconds", queue="m-a") < 90  # type: ignore[operator]
    assert value(samples, "jobwire_queue_oldest_due_age_seconds", queue="m-b") is None
    assert [value(samples, "jobwire_queue_paused", queue=q) for q in ("m-a", "m-b", "m-c")] == [0, 1, 1]


async def test_a_schedules_queue_and_a_queue_whose_work_finished_are_listed_at_zero(
    keyed_server: RunningServer, db: Database
) -> None:
    async with db.transaction() as conn:
        await conn.execute("INSERT INTO job_handlers (name, url) VALUES ('h', 'http://127.0.0.1:9/')")
        await conn.execute("INSERT INTO job_schedules (job_id, cron_expression, handler, queue) "
                           "VALUES ('nightly', '0 0 3 * * *', 'h', 'm-nightly')")
    await insert(db, "m-done", "ENQUEUED")
    async with httpx.AsyncClient(base_url=keyed_server.url, timeout=10) as client:
        first = await scrape(client)
        async with db.transaction() as conn:
            await conn.execute("UPDATE job_executions SET state = 'SUCCEEDED' WHERE queue = 'm-done'")
        then = await scrape(client)

    for state in STATES:
        assert value(first, "jobwire_queue_jobs", queue="m-nightly", state=state) == 0
        assert value(then, "jobwire_queue_jobs", queue="m-nightly", state=state) == 0
    assert value(first, "jobwire_queue_jobs", queue="m-done", state="enqueued_due") == 1
    # Its only row is history now: still listed by this node, every state at 0 (its series goes on).
    assert [value(then, "jobwire_queue_jobs", queue="m-done", state=s) for s in STATES] == [0, 0, 0, 0]
    assert value(then, "jobwire_queue_paused", queue="m-nightly") == 0


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
    jobs = (("ok", {}), ("ok", {"queue": "q2"}), ("ok", {}), ("later", {}), ("later", {}),
            ("bad", {"max_attempts": 2, "queue": "q2"}))
    ids = [(await api.post("/v1/jobs", json={"handler": name, **extra})).json()["id"] for name, extra in jobs]
    for execution_id in ids[:3]:
        await wait_for_state(api, execution_id, "SUCCEEDED")
    await wait_for_state(api, ids[5], "DEAD_LETTER")
    await handler.wait_for(7)
    for execution_id, outcome in ((ids[3], "succeeded"), (ids[4], "failed")):
        sent = next(job for job in handler.received if job["execution_id"] == execution_id)
        done = await api.post(f"/v1/executions/{execution_id}/complete",
                              json={"outcome": outcome, "retryable": False, "error": {"message": "x"}},
                              headers={"authorization": f"Bearer {sent['callback']['token']}"})
        assert done.status_code == 200, done.text

    samples = await scrape(api)
    assert value(samples, "jobwire_jobs_enqueued_total") == 6
    assert value(samples, "jobwire_jobs_claimed_total") == 7  # bad's retry is a second claim
    assert value(samples, "jobwire_claims_total") >= 1  # type: ignore[operator]

    def calls(handler_name: str, queue: str) -> list[float | None]:
        return [value(samples, "jobwire_handler_calls_total", handler=handler_name, queue=queue, outcome=o)
                for o in OUTCOMES]

    assert calls("ok", "default") == [2, 0, 0, 0]
    assert calls("ok", "q2") == [1, 0, 0, 0]
    assert calls("later", "default") == [0, 2, 0, 0]
    assert calls("bad", "q2") == [0, 0, 2, 0]
    assert calls("bad", "default") == [None] * 4  # no such call: no series
    assert [value(samples, "jobwire_callback_completions_total", handler="later", queue="default", outcome=o)
            for o in ("succeeded", "failed")] == [1, 1]

    # Every call is one observation of its handler's durations; every claimed job one of its queue's wait.
    for name, n in (("ok", 3), ("later", 2), ("bad", 2)):
        assert value(samples, "jobwire_handler_call_duration_seconds_count", handler=name) == n
        assert value(samples, "jobwire_handler_call_duration_seconds_bucket", handler=name, le="+Inf") == n
        assert value(samples, "jobwire_handler_call_duration_seconds_sum", handler=name) > 0  # type: ignore[operator]
    assert value(samples, "jobwire_queue_wait_seconds_count", queue="default") == 4
    assert value(samples, "jobwire_queue_wait_seconds_count", queue="q2") == 3
    buckets = sorted((float(dict(k[1])["le"]), v) for k, v in samples.items()
                     if k[0] == "jobwire_queue_wait_seconds_bucket" and ("queue", "q2") in k[1])
    assert [n for _, n in buckets] == sorted(n for _, n in buckets) and buckets[-1] == (float("inf"), 3)
