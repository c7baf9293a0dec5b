"""OpenTelemetry traces and metrics of a node's work (`JOBWIRE_OTEL`, the `otel` extra).

Imported only by the composition root, and only when the setting is on: without it no module of
Jobwire imports the OpenTelemetry API, and the components given no Telemetry (None) skip every
hook at the cost of one `is not None`. The spans and instruments come from the API's global
providers (set by the application's SDK set-up or `opentelemetry-instrument`) unless providers
are given (tests).

Spans: `jobwire.enqueue` (PRODUCER) around an enqueue request, its context stored as the jobs'
`metadata.context.traceparent`; `jobwire.dispatch` (CLIENT) around each handler call, its own
context sent to the handler as `traceparent`; `jobwire.complete` around a completion callback.
An attempt's dispatch span is a child of the stored traceparent on the first attempt (0) and the
root of a new trace linked to it on a later one: a retry days later must not stretch the
enqueuing trace (OpenTelemetry's messaging conventions).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import replace
from datetime import datetime
from typing import Any
from urllib.parse import urlsplit

from opentelemetry import context as otel_context
from opentelemetry import metrics, trace
from opentelemetry.context import Context
from opentelemetry.metrics import MeterProvider
from opentelemetry.trace import Link, Span, SpanKind, Status, StatusCode, TracerProvider
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from app.delivery.dispatch import VERSION
from app.domain.dispatch import ClaimedJob, Outcome, OutcomeKind
from app.domain.executions import Execution, NewJob
from app.domain.metrics import CALL_SECONDS_BUCKETS, WAIT_SECONDS_BUCKETS
from app.domain.tracing import stored_traceparent

SCOPE = "jobwire"  # the instrumentation scope of every span and instrument

# Attribute names: OpenTelemetry's where one exists, else under `jobwire.`.
EXECUTION_ID = "jobwire.execution.id"
JOB_ID = "jobwire.job.id"
ATTEMPT = "jobwire.attempt"
HANDLER = "jobwire.handler"
QUEUE = "jobwire.queue"
OUTCOME = "jobwire.outcome"
STATE = "jobwire.execution.state"
BATCH_SIZE = "jobwire.batch.size"
STATUS_CODE = "http.response.status_code"

_W3C = TraceContextTextMapPropagator()
_FAILED = (OutcomeKind.FAILED, OutcomeKind.ABANDONED)


class DispatchTrace:
    """One handler call's span, current in the calling task until end(): what the call makes
    (an instrumented HTTP client, log records) belongs to it."""

    __slots__ = ("_telemetry", "_job", "span", "headers", "_token")

    def __init__(self, telemetry: Telemetry, job: ClaimedJob, span: Span) -> None:
        self._telemetry = telemetry
        self._job = job
        self.span = span
        context = trace.set_span_in_context(span)
        # traceparent (and tracestate) of this span: the handler request's parent.
        self.headers: dict[str, str] = {}
        _W3C.inject(self.headers, context=context)
        self._token: object | None = otel_context.attach(context)

    def end(self, outcome: Outcome | None, seconds: float) -> None:
        """The call's outcome (None: interrupted by something else than a shutdown) and its
        duration on this node's clock; in the task that started it."""
        if self._token is not None:
            otel_context.detach(self._token)  # type: ignore[arg-type]
            self._token = None
        span, job = self.span, self._job
        kind = outcome.kind.value if outcome is not None else "interrupted"
        if span.is_recording():
            span.set_attribute(OUTCOME, kind)
            if outcome is not None and outcome.http_status is not None:
                span.set_attribute(STATUS_CODE, outcome.http_status)
            if outcome is None or outcome.kind in _FAILED:
                if outcome is not None and outcome.error_type:
                    span.set_attribute("error.type", outcome.error_type)
                span.set_status(Status(StatusCode.ERROR, (outcome.error or "")[:256] if outcome else kind))
        span.end()
        self._telemetry.call_duration.record(seconds, {HANDLER: job.handler, QUEUE: job.queue, OUTCOME: kind})


class EnqueueTrace:
    """An enqueue request's span; `jobs` are the request's, carrying its context as their
    traceparent (a job whose metadata sets one keeps that: jobwire_enqueue's rule)."""

    __slots__ = ("span", "jobs")

    def __init__(self, span: Span, jobs: Sequence[NewJob]) -> None:
        self.span = span
        carrier: dict[str, str] = {}
        _W3C.inject(carrier, context=trace.set_span_in_context(span, Context()))
        traceparent = carrier.get("traceparent")
        self.jobs = [replace(job, traceparent=traceparent) for job in jobs] if traceparent else list(jobs)

    def enqueued(self, executions: Sequence[Execution]) -> None:
        if len(executions) == 1 and self.span.is_recording():
            self.span.set_attribute(EXECUTION_ID, str(executions[0].id))


class CompletionTrace:
    __slots__ = ("span",)

    def __init__(self, span: Span) -> None:
        self.span = span

    def completed(self, execution: Execution) -> None:
        """The execution as the callback left it (or found it: a duplicate changes nothing)."""
        if self.span.is_recording():
            self.span.set_attributes({ATTEMPT: execution.attempt, HANDLER: execution.handler,
                                      QUEUE: execution.queue, STATE: execution.state.value})


class Telemetry:
    """Spans and histograms on OpenTelemetry's providers: the global ones unless given."""

    def __init__(self, tracer_provider: TracerProvider | None = None,
                 meter_provider: MeterProvider | None = None) -> None:
        self.tracer = trace.get_tracer(SCOPE, VERSION, tracer_provider=tracer_provider)
        meter = metrics.get_meter(SCOPE, VERSION, meter_provider=meter_provider)
        self.queue_wait = meter.create_histogram(
            "jobwire.dispatch.queue_wait", unit="s",
            description="How long an attempt waited to be dispatched, from its scheduled_at to its claim "
                        "(database time)",
            explicit_bucket_boundaries_advisory=WAIT_SECONDS_BUCKETS)
        self.call_duration = meter.create_histogram(
            "jobwire.dispatch.duration", unit="s",
            description="How long a handler call took, from the request to its outcome",
            explicit_bucket_boundaries_advisory=CALL_SECONDS_BUCKETS)

    def dispatch(self, job: ClaimedJob) -> DispatchTrace:
        """The span of one attempt's call, started now and made current; records its queue wait."""
        stored = stored_traceparent(job.metadata)
        origin = _W3C.extract({"traceparent": stored}) if stored else None
        links: Sequence[Link] = ()
        if origin is None or job.attempt == 0:
            parent = origin or Context()
        else:  # a retry: a trace of its own, linked to the enqueuing one
            parent = Context()
            links = (Link(trace.get_current_span(origin).get_span_context()),)
        attributes: dict[str, Any] = {EXECUTION_ID: str(job.id), JOB_ID: job.job_id, ATTEMPT: job.attempt,
                                      HANDLER: job.handler, QUEUE: job.queue, "http.request.method": "POST"}
        attributes.update(_server(job.handler_url))
        span = self.tracer.start_span("jobwire.dispatch", context=parent, kind=SpanKind.CLIENT,
                                      attributes=attributes, links=links)
        self.queue_wait.record(_seconds(job.started_at, job.scheduled_at), {HANDLER: job.handler, QUEUE: job.queue})
        return DispatchTrace(self, job, span)

    @contextmanager
    def enqueuing(self, jobs: Sequence[NewJob], batch: bool) -> Iterator[EnqueueTrace]:
        """The current span of an enqueue request: a child of the current span (the request's server
        span, when the application has one), else of the request's traceparent."""
        attributes: dict[str, Any] = {BATCH_SIZE: len(jobs)} if batch else {}
        if len(jobs) == 1:
            attributes.update({HANDLER: jobs[0].handler, QUEUE: jobs[0].queue})
        parent = _incoming(jobs[0].traceparent if jobs else None)
        with self.tracer.start_as_current_span("jobwire.enqueue", context=parent, kind=SpanKind.PRODUCER,
                                               attributes=attributes) as span:
            yield EnqueueTrace(span, jobs)

    @contextmanager
    def completing(self, execution_id: Any, succeeded: bool, traceparent: str | None) -> Iterator[CompletionTrace]:
        """The current span of a completion callback, parented as an enqueue's."""
        attributes = {EXECUTION_ID: str(execution_id), OUTCOME: "succeeded" if succeeded else "failed"}
        with self.tracer.start_as_current_span("jobwire.complete", context=_incoming(traceparent),
                                               attributes=attributes) as span:
            yield CompletionTrace(span)


def _incoming(traceparent: str | None) -> Context | None:
    """The parent of a request's span: None (the current context) when a span is current, else the
    request's traceparent header, if it has a valid one."""
    if trace.get_current_span().get_span_context().is_valid or not traceparent:
        return None
    return _W3C.extract({"traceparent": traceparent})


def _server(url: str | None) -> Mapping[str, Any]:
    """server.address and server.port of a handler URL (never the URL itself: it may hold a token)."""
    if not url:
        return {}
    try:
        parts = urlsplit(url)
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        return {}
    return {"server.address": parts.hostname, "server.port": port} if parts.hostname else {}


def _seconds(later: datetime, earlier: datetime) -> float:
    return max((later - earlier).total_seconds(), 0.0)
