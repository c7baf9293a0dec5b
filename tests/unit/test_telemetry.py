"""Telemetry (app/delivery/telemetry.py) on an SDK's in-memory exporter and reader: a dispatch span's
parent or link, the context it sends, its attributes; enqueue and completion spans; the histograms;
and JOBWIRE_OTEL, the switch that decides whether the OpenTelemetry API is imported at all."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from uuid import uuid4

import orjson
import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import HistogramDataPoint, InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from app.config import Settings
from app.delivery.telemetry import Telemetry
from app.domain.dispatch import ClaimedJob, Outcome, OutcomeKind
from app.domain.executions import NewJob
from app.domain.metrics import CALL_SECONDS_BUCKETS, WAIT_SECONDS_BUCKETS
from app.domain.tracing import stored_traceparent

REPO = Path(__file__).resolve().parents[2]
TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
PARENT = "00f067aa0ba902b7"
STORED = f"00-{TRACE}-{PARENT}-01"


@dataclass
class Recorded:
    spans: InMemorySpanExporter
    reader: InMemoryMetricReader
    telemetry: Telemetry

    def finished(self, name: str) -> list[ReadableSpan]:
        return [s for s in self.spans.get_finished_spans() if s.name == name]

    def points(self, metric: str) -> list[HistogramDataPoint]:
        data = self.reader.get_metrics_data()
        found: list[HistogramDataPoint] = []
        for resource in data.resource_metrics if data else ():
            for scope in resource.scope_metrics:
                for m in scope.metrics:
                    if m.name == metric:
                        found += m.data.data_points  # type: ignore[arg-type]
        return found


@pytest.fixture
def otel() -> Recorded:
    spans = InMemorySpanExporter()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(spans))
    reader = InMemoryMetricReader()
    return Recorded(spans, reader, Telemetry(tracer_provider, MeterProvider(metric_readers=[reader])))


def claimed(attempt: int = 0, metadata: Any = None, waited: float = 2.0) -> ClaimedJob:
    now = datetime.now(UTC)
    return ClaimedJob(id=uuid4(), job_id="j-1", job_type="IMMEDIATE", queue="mail", attempt=attempt, max_attempts=5,
                      payload=None, parameters=None, metadata=metadata, scheduled_at=now - timedelta(seconds=waited),
                      started_at=now, deadline_at=now + timedelta(seconds=60), seconds_left=60.0, handler="send",
                      handler_url="https://handlers.example:8443/send?token=x", handler_secret=None)


def context_of(span: ReadableSpan) -> str:
    c = span.context
    assert c is not None
    return f"00-{c.trace_id:032x}-{c.span_id:016x}-{c.trace_flags:02x}"


def with_trace(traceparent: str) -> orjson.Fragment:
    """Metadata as a claim returns it: an orjson fragment of the stored JSON text."""
    return orjson.Fragment(orjson.dumps({"other": 1, "context": {"traceparent": traceparent}}))


def test_the_first_attempt_is_a_child_of_the_stored_traceparent_and_sends_its_own(otel: Recorded) -> None:
    job = claimed(metadata=with_trace(STORED))
    traced = otel.telemetry.dispatch(job)
    traced.end(Outcome(OutcomeKind.SUCCEEDED, http_status=200), 0.25)

    [span] = otel.finished("jobwire.dispatch")
    assert span.kind is SpanKind.CLIENT
    assert span.parent is not None
    assert (f"{span.parent.trace_id:032x}", f"{span.parent.span_id:016x}") == (TRACE, PARENT)
    assert span.links == ()
    assert traced.headers["traceparent"] == context_of(span) != STORED
    assert dict(span.attributes or {}) == {
        "jobwire.execution.id": str(job.id), "jobwire.job.id": "j-1", "jobwire.attempt": 0, "jobwire.handler": "send",
        "jobwire.queue": "mail", "jobwire.outcome": "succeeded", "http.request.method": "POST",
        "http.response.status_code": 200, "server.address": "handlers.example", "server.port": 8443}
    assert span.status.status_code is StatusCode.UNSET


def test_a_later_attempt_starts_a_trace_of_its_own_linked_to_the_stored_one(otel: Recorded) -> None:
    otel.telemetry.dispatch(claimed(attempt=3, metadata=with_trace(STORED))).end(
        Outcome(OutcomeKind.FAILED, error="HTTP 500 Internal Server Error", error_type="http_status", http_status=500),
        0.1)

    [span] = otel.finished("jobwire.dispatch")
    assert span.parent is None and span.context is not None and f"{span.context.trace_id:032x}" != TRACE
    [link] = span.links
    assert (f"{link.context.trace_id:032x}", f"{link.context.span_id:016x}") == (TRACE, PARENT)
    attributes = span.attributes or {}
    assert attributes["jobwire.attempt"] == 3 and attributes["jobwire.outcome"] == "failed"
    assert attributes["error.type"] == "http_status" and attributes["http.response.status_code"] == 500
    assert span.status.status_code is StatusCode.ERROR and span.status.description == "HTTP 500 Internal Server Error"


@pytest.mark.parametrize("metadata", [None, {"context": {"traceparent": "not one"}}, {"context": "x"}, [1],
                                      orjson.Fragment(b'{"traceparent": "' + STORED.encode() + b'"}')])
def test_a_job_without_a_stored_traceparent_is_dispatched_in_a_trace_of_its_own(otel: Recorded,
                                                                                   metadata: Any) -> None:
    otel.telemetry.dispatch(claimed(metadata=metadata)).end(Outcome(OutcomeKind.ACCEPTED, http_status=202), 0.01)
    [span] = otel.finished("jobwire.dispatch")
    assert span.parent is None and span.links == ()


def test_the_stored_traceparent_is_read_from_a_value_or_a_claimed_fragment() -> None:
    assert stored_traceparent({"context": {"traceparent": STORED}}) == STORED
    assert stored_traceparent(with_trace(STORED)) == STORED
    assert stored_traceparent(orjson.Fragment(b'{"context": {"k": "traceparent"}}')) is None
    assert stored_traceparent(None) is None


def test_the_histograms_record_the_queue_wait_and_the_call_by_handler_and_outcome(otel: Recorded) -> None:
    for outcome, seconds in ((OutcomeKind.SUCCEEDED, 0.2), (OutcomeKind.SUCCEEDED, 0.4), (OutcomeKind.ABANDONED, 9.0)):
        otel.telemetry.dispatch(claimed(waited=30.0)).end(Outcome(outcome), seconds)

    calls = {p.attributes["jobwire.outcome"]: p for p in otel.points("jobwire.dispatch.duration")}  # type: ignore[index]
    assert set(calls) == {"succeeded", "abandoned"}
    assert (calls["succeeded"].count, calls["succeeded"].sum) == (2, pytest.approx(0.6))
    assert dict(calls["abandoned"].attributes or {}) == {"jobwire.handler": "send", "jobwire.queue": "mail",
                                                        "jobwire.outcome": "abandoned"}
    assert tuple(calls["succeeded"].explicit_bounds) == CALL_SECONDS_BUCKETS
    [wait] = otel.points("jobwire.dispatch.queue_wait")
    assert dict(wait.attributes or {}) == {"jobwire.handler": "send", "jobwire.queue": "mail"}
    assert wait.count == 3 and wait.sum == pytest.approx(90.0, abs=0.1)
    assert tuple(wait.explicit_bounds) == WAIT_SECONDS_BUCKETS


def test_an_enqueue_is_a_producer_span_whose_context_the_jobs_store(otel: Recorded) -> None:
    jobs = [NewJob(handler="send", job_id="a", queue="mail", traceparent=STORED), NewJob(handler="send", job_id="b")]
    with otel.telemetry.enqueuing(jobs, batch=True) as traced:
        pass
    [span] = otel.finished("jobwire.enqueue")
    assert span.kind is SpanKind.PRODUCER and dict(span.attributes or {}) == {"jobwire.batch.size": 2}
    assert span.parent is not None and f"{span.parent.span_id:016x}" == PARENT  # the request's traceparent
    assert [job.traceparent for job in traced.jobs] == [context_of(span)] * 2
    assert [job.job_id for job in traced.jobs] == ["a", "b"]


def test_a_span_current_when_a_request_comes_is_the_parent_of_its_span(otel: Recorded) -> None:
    server = otel.telemetry.tracer.start_span("POST /v1/executions/{execution_id}/complete")
    from opentelemetry import trace

    with trace.use_span(server, end_on_exit=True):
        with otel.telemetry.completing(uuid4(), succeeded=True, traceparent=STORED):
            pass
    [span] = otel.finished("jobwire.complete")
    assert span.parent is not None and server.get_span_context().span_id == span.parent.span_id


def test_a_failed_completion_records_its_error(otel: Recorded) -> None:
    execution_id = uuid4()
    with pytest.raises(LookupError), otel.telemetry.completing(execution_id, succeeded=False, traceparent=STORED):
        raise LookupError("no such execution")
    [span] = otel.finished("jobwire.complete")
    assert span.parent is not None and f"{span.parent.span_id:016x}" == PARENT
    assert dict(span.attributes or {}) == {"jobwire.execution.id": str(execution_id), "jobwire.outcome": "failed"}
    assert span.status.status_code is StatusCode.ERROR and span.events[0].name == "exception"


def python(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120)


def test_off_no_module_of_jobwire_imports_the_telemetry_and_the_node_gets_none() -> None:
    done = python(
        "import sys\n"
        "import fastapi, uvicorn, aiohttp\n"
        "brought = 'opentelemetry' in sys.modules  # recent FastAPI releases import the API themselves\n"
        "from app.config import Settings\n"
        "from app.main import create_app, open_telemetry\n"
        "import app.cli, app.dev\n"
        "create_app(Settings())\n"
        "assert open_telemetry(Settings(otel=False)) is None\n"
        "assert 'app.delivery.telemetry' not in sys.modules, 'the telemetry module was imported'\n"
        "assert brought or 'opentelemetry' not in sys.modules, 'the API was imported'\n")
    assert done.returncode == 0, done.stderr


def test_on_the_telemetry_uses_the_global_providers_of_the_api() -> None:
    """As `opentelemetry-instrument` or an application's SDK set-up leaves them, even when set after
    the node started (the API's proxies)."""
    done = python(
        "from opentelemetry import trace\n"
        "from opentelemetry.sdk.trace import TracerProvider\n"
        "from opentelemetry.sdk.trace.export import SimpleSpanProcessor\n"
        "from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter\n"
        "from app.config import Settings\n"
        "from app.domain.dispatch import Outcome, OutcomeKind\n"
        "from app.main import open_telemetry\n"
        "from tests.unit.test_telemetry import claimed\n"
        "telemetry = open_telemetry(Settings(otel=True))\n"
        "exporter = InMemorySpanExporter()\n"
        "provider = TracerProvider()\n"
        "provider.add_span_processor(SimpleSpanProcessor(exporter))\n"
        "trace.set_tracer_provider(provider)\n"
        "telemetry.dispatch(claimed()).end(Outcome(OutcomeKind.SUCCEEDED), 0.1)\n"
        "print([s.name for s in exporter.get_finished_spans()])\n")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "['jobwire.dispatch']"


def test_on_without_the_api_the_node_does_not_start_and_says_why() -> None:
    done = python(
        "import sys\n"
        "from app.config import Settings\n"
        "from app.main import open_telemetry\n"
        "from app.startup import StartupFailure\n"
        "sys.modules['opentelemetry'] = None  # as if the otel extra were not installed (FastAPI may bring it)\n"
        "try:\n"
        "    open_telemetry(Settings(otel=True))\n"
        "except StartupFailure as failure:\n"
        "    print(failure)\n")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("JOBWIRE_OTEL: the OpenTelemetry API is not installed")
    assert "pip install 'jobwire[otel]'" in done.stdout


def test_the_setting_is_off_by_default() -> None:
    assert Settings().otel is False
    assert Settings(otel="true").otel is True  # type: ignore[arg-type]
