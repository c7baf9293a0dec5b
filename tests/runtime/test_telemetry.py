"""Traces and metrics end to end (JOBWIRE_OTEL): a real node on the test database, with its telemetry on
an SDK's in-memory exporter and reader, calling a real handler. Enqueue, dispatch and completion are
spans of one trace on the first attempt; a retry is a trace of its own, linked to the stored context;
the handler receives each call's own traceparent. Without telemetry, nothing of it happens."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import httpx
import pytest
import uvicorn
from aiohttp import web
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import HistogramDataPoint, InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from app.delivery.telemetry import Telemetry
from app.main import create_app
from tests.conftest import HandlerServer, register, settings_for, wait_for_state

CLIENT_TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
CLIENT_SPAN = "00f067aa0ba902b7"
CLIENT = f"00-{CLIENT_TRACE}-{CLIENT_SPAN}-01"  # the enqueuing application's span


class Recorded:
    def __init__(self) -> None:
        self.spans = InMemorySpanExporter()
        tracer_provider = TracerProvider()
        tracer_provider.add_span_processor(SimpleSpanProcessor(self.spans))
        self.reader = InMemoryMetricReader()
        self.telemetry = Telemetry(tracer_provider, MeterProvider(metric_readers=[self.reader]))

    def finished(self, name: str) -> list[ReadableSpan]:
        return sorted((s for s in self.spans.get_finished_spans() if s.name == name),
                      key=lambda s: (s.attributes or {}).get("jobwire.attempt", 0))

    def points(self, metric: str) -> list[HistogramDataPoint]:
        data = self.reader.get_metrics_data()
        return [p for r in (data.resource_metrics if data else ()) for s in r.scope_metrics for m in s.metrics
                if m.name == metric for p in m.data.data_points]  # type: ignore[misc]


def context_of(span: ReadableSpan) -> tuple[str, str]:
    assert span.context is not None
    return f"{span.context.trace_id:032x}", f"{span.context.span_id:016x}"


def parent_of(span: ReadableSpan) -> tuple[str, str] | None:
    return None if span.parent is None else (f"{span.parent.trace_id:032x}", f"{span.parent.span_id:016x}")


def traceparent(span: ReadableSpan) -> str:
    assert span.context is not None
    return "00-{}-{}-{:02x}".format(*context_of(span), span.context.trace_flags)


@asynccontextmanager
async def node(database_url: str, telemetry: Telemetry | None) -> AsyncIterator[httpx.AsyncClient]:
    """A node (API and dispatcher) given `telemetry`, as create_app takes it; a client of it."""
    settings = settings_for(database_url)
    server = uvicorn.Server(uvicorn.Config(create_app(settings, telemetry=telemetry), host="127.0.0.1",
                                           port=settings.port, log_level="warning", lifespan="on", access_log=False))
    task = asyncio.create_task(server.serve())
    try:
        for _ in range(300):
            if server.started or task.done():
                break
            await asyncio.sleep(0.02)
        if task.done():
            task.result()
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{settings.port}", timeout=10) as client:
            yield client
    finally:
        server.should_exit = True
        await task


@pytest.fixture
def otel() -> Recorded:
    return Recorded()


@pytest.fixture
async def traced(db: Any, database_url: str, otel: Recorded) -> AsyncIterator[httpx.AsyncClient]:
    async with node(database_url, otel.telemetry) as client:
        yield client


def replying(*statuses: int) -> Callable[[web.Request, dict[str, Any]], Awaitable[web.StreamResponse]]:
    """Replies with each status in turn (a 200 with a result once they are spent)."""
    left = list(statuses)

    async def reply(_: web.Request, job: dict[str, Any]) -> web.StreamResponse:
        if left:
            return web.json_response({"error": {"message": "not now"}}, status=left.pop(0))
        return web.json_response({"result": {"attempt": job["attempt"]}})
    return reply


async def enqueue(api: httpx.AsyncClient, headers: dict[str, str] | None = None, **body: Any) -> dict[str, Any]:
    response = await api.post("/v1/jobs", json=body, headers=headers or {})
    assert response.status_code == 201, response.text
    return response.json()


async def test_enqueue_and_the_first_dispatch_are_one_trace_and_the_handler_gets_the_calls_context(
        traced: httpx.AsyncClient, otel: Recorded, handler: HandlerServer) -> None:
    await register(traced, "echo", handler.route("/echo", replying()))
    job = await enqueue(traced, {"traceparent": CLIENT}, handler="echo", queue="mail", payload={"n": 1})
    await wait_for_state(traced, job["id"], "SUCCEEDED")

    [enqueued] = otel.finished("jobwire.enqueue")
    assert enqueued.kind is SpanKind.PRODUCER and parent_of(enqueued) == (CLIENT_TRACE, CLIENT_SPAN)
    assert (enqueued.attributes or {})["jobwire.execution.id"] == job["id"]
    stored = job["metadata"]["context"]["traceparent"]
    assert stored == traceparent(enqueued)  # what the node stored: its enqueue span, in the client's trace

    [dispatched] = otel.finished("jobwire.dispatch")
    assert dispatched.kind is SpanKind.CLIENT and parent_of(dispatched) == context_of(enqueued)
    assert dict(dispatched.attributes or {}) == {
        "jobwire.execution.id": job["id"], "jobwire.job.id": job["job_id"], "jobwire.attempt": 0,
        "jobwire.handler": "echo", "jobwire.queue": "mail", "jobwire.outcome": "succeeded",
        "http.request.method": "POST", "http.response.status_code": 200,
        "server.address": "127.0.0.1", "server.port": int(handler.url.rpartition(":")[2])}
    [headers] = handler.headers
    assert headers["traceparent"] == traceparent(dispatched) != stored  # the call's own context, not the job's
    assert handler.received[0]["metadata"]["context"]["traceparent"] == stored  # the body: as stored


async def test_a_retry_is_a_trace_of_its_own_linked_to_the_stored_context(
        traced: httpx.AsyncClient, otel: Recorded, handler: HandlerServer) -> None:
    await register(traced, "flaky", handler.route("/flaky", replying(500)))
    job = await enqueue(traced, {"traceparent": CLIENT}, handler="flaky")
    await wait_for_state(traced, job["id"], "SUCCEEDED")
    stored = job["metadata"]["context"]["traceparent"]
    stored_trace, stored_span = stored.split("-")[1:3]

    first, second = otel.finished("jobwire.dispatch")
    assert (first.attributes or {})["jobwire.attempt"] == 0 and parent_of(first) == (stored_trace, stored_span)
    assert (first.attributes or {})["jobwire.outcome"] == "failed"
    assert (first.attributes or {})["http.response.status_code"] == 500
    assert first.status.status_code is StatusCode.ERROR and first.links == ()

    assert (second.attributes or {})["jobwire.attempt"] == 1
    assert (second.attributes or {})["jobwire.outcome"] == "succeeded"
    assert second.parent is None and context_of(second)[0] not in (stored_trace, CLIENT_TRACE)
    [link] = second.links
    assert (f"{link.context.trace_id:032x}", f"{link.context.span_id:016x}") == (stored_trace, stored_span)
    assert [h["traceparent"] for h in handler.headers] == [traceparent(first), traceparent(second)]


async def test_a_completion_callback_is_a_span_in_the_trace_the_handler_sends(
        traced: httpx.AsyncClient, otel: Recorded, handler: HandlerServer) -> None:
    await register(traced, "slow", handler.route("/slow", replying(202)))
    job = await enqueue(traced, handler="slow")
    await handler.wait_for(1)
    sent, headers = handler.received[0], handler.headers[0]
    for _ in range(200):  # the 202 is recorded once the node lets go of the execution
        if (await traced.get(f"/v1/executions/{job['id']}")).json()["locked_by"] is None:
            break
        await asyncio.sleep(0.02)
    # A handler that continues the trace it was called in sends that context back.
    done = await traced.post(f"/v1/executions/{job['id']}/complete", json={"outcome": "succeeded", "result": 1},
                             headers={"authorization": f"Bearer {sent['callback']['token']}",
                                      "traceparent": headers["traceparent"]})
    assert done.status_code == 200 and done.json()["state"] == "SUCCEEDED"

    [dispatched] = otel.finished("jobwire.dispatch")
    assert (dispatched.attributes or {})["jobwire.outcome"] == "accepted"
    assert (dispatched.attributes or {})["http.response.status_code"] == 202
    [completed] = otel.finished("jobwire.complete")
    assert parent_of(completed) == context_of(dispatched)
    assert dict(completed.attributes or {}) == {
        "jobwire.execution.id": job["id"], "jobwire.outcome": "succeeded", "jobwire.attempt": 0,
        "jobwire.handler": "slow", "jobwire.queue": "default", "jobwire.execution.state": "SUCCEEDED"}
    [enqueued] = otel.finished("jobwire.enqueue")  # no traceparent came with the job: the node's starts one
    assert enqueued.parent is None and parent_of(dispatched) == context_of(enqueued)


async def test_the_histograms_count_each_call_by_handler_and_outcome_and_each_wait(
        traced: httpx.AsyncClient, otel: Recorded, handler: HandlerServer) -> None:
    await register(traced, "flaky", handler.route("/flaky", replying(500)))
    await register(traced, "echo", handler.route("/echo", replying()))
    jobs = [await enqueue(traced, handler="flaky"), await enqueue(traced, handler="echo"),
            await enqueue(traced, handler="echo")]
    for job in jobs:
        await wait_for_state(traced, job["id"], "SUCCEEDED")

    calls = {(p.attributes or {})["jobwire.handler"]: {} for p in otel.points("jobwire.dispatch.duration")}
    for p in otel.points("jobwire.dispatch.duration"):
        attributes = p.attributes or {}
        assert attributes["jobwire.queue"] == "default"
        calls[attributes["jobwire.handler"]][attributes["jobwire.outcome"]] = p.count  # type: ignore[index]
    assert calls == {"flaky": {"failed": 1, "succeeded": 1}, "echo": {"succeeded": 2}}
    waits = {(p.attributes or {})["jobwire.handler"]: p.count for p in otel.points("jobwire.dispatch.queue_wait")}
    assert waits == {"flaky": 2, "echo": 2}
    # A retry waits from its own scheduled_at (its backoff's end), never from the first enqueue.
    assert all(p.sum < 5 for p in otel.points("jobwire.dispatch.queue_wait"))


async def test_without_telemetry_nothing_is_recorded_and_the_traceparent_is_as_today(
        db: Any, database_url: str, otel: Recorded, handler: HandlerServer) -> None:
    async with node(database_url, None) as api:
        await register(api, "echo", handler.route("/echo", replying()))
        job = await enqueue(api, {"traceparent": CLIENT}, handler="echo")
        plain = await enqueue(api, handler="echo")
        await wait_for_state(api, job["id"], "SUCCEEDED")
        await wait_for_state(api, plain["id"], "SUCCEEDED")
        completed = (await api.get(f"/v1/executions/{job['id']}")).json()
    assert job["metadata"] == completed["metadata"] == {"context": {"traceparent": CLIENT}}  # the header, as sent
    assert plain["metadata"] is None
    assert all("traceparent" not in {k.lower() for k in h} for h in handler.headers)
    assert sorted(r["metadata"] is None for r in handler.received) == [False, True]
    assert otel.spans.get_finished_spans() == ()
    assert otel.points("jobwire.dispatch.duration") == []
