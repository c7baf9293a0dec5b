"""A node's metrics as Prometheus text exposition (format 0.0.4), written by prometheus_client.

The node keeps its own counters (app/domain/metrics.py: plain integers on the event loop, nothing
to lock on the dispatch path); this module turns a snapshot of them into metric families, which
prometheus_client writes out (escaping, number formatting, a histogram's `_bucket`/`_sum`/`_count`).
"""

from __future__ import annotations

from collections.abc import Iterable

from prometheus_client.exposition import generate_latest
from prometheus_client.metrics_core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.registry import Collector
from prometheus_client.utils import floatToGoString

from app.domain.metrics import CALL_OUTCOMES, COMPLETION_OUTCOMES, Histogram, label_pairs
from app.domain.flow import CircuitState
from app.services.metrics import MetricsSnapshot

CIRCUIT_STATES = tuple(s.value for s in CircuitState)

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


class _Families(Collector):
    def __init__(self, families: list[Metric]) -> None:
        self._families = families

    def collect(self) -> Iterable[Metric]:
        return self._families


def render(m: MetricsSnapshot) -> bytes:
    return generate_latest(_Families(families(m)))


def families(m: MetricsSnapshot) -> list[Metric]:
    c = m.counters
    queue_jobs = GaugeMetricFamily(
        "jobwire_queue_jobs", "Executions of a queue by state: enqueued_due (claimable now unless the queue is "
        "paused), enqueued_scheduled (due later), processing, dead_letter; every state of every queue, 0 included.",
        labels=["queue", "state"])
    oldest = GaugeMetricFamily(
        "jobwire_queue_oldest_due_age_seconds",
        "Age of the queue's oldest due ENQUEUED execution, in database time (absent when none is due).",
        labels=["queue"])
    paused = GaugeMetricFamily("jobwire_queue_paused", "1 while the queue is paused.", labels=["queue"])
    for q in m.queues:
        for state, n in q.by_state():
            queue_jobs.add_metric([q.queue, state], n)
        if q.oldest_due_age_seconds is not None:
            oldest.add_metric([q.queue], q.oldest_due_age_seconds)
        paused.add_metric([q.queue], int(q.paused))

    calls = CounterMetricFamily(
        "jobwire_handler_calls_total", "Handler calls this node's dispatcher made, by handler, queue and outcome: "
        "succeeded (2xx), accepted (202: the handler reports back), failed, abandoned (deadline passed, shutdown).",
        labels=["handler", "queue", "outcome"])
    for handler, queue in label_pairs(c.calls):
        for outcome in CALL_OUTCOMES:
            calls.add_metric([handler, queue, outcome], c.calls[(handler, queue, outcome)])
    completions = CounterMetricFamily(
        "jobwire_callback_completions_total",
        "Completion callbacks this node applied (each moved an execution), by handler, queue and outcome.",
        labels=["handler", "queue", "outcome"])
    for handler, queue in label_pairs(c.completions):
        for outcome in COMPLETION_OUTCOMES:
            completions.add_metric([handler, queue, outcome], c.completions[(handler, queue, outcome)])

    call_seconds = HistogramMetricFamily(
        "jobwire_handler_call_duration_seconds",
        "How long this node's handler calls took, from sending the request to the outcome, by handler.",
        labels=["handler"])
    for handler, h in sorted(c.call_seconds.items()):
        _observed(call_seconds, [handler], h)
    wait_seconds = HistogramMetricFamily(
        "jobwire_queue_wait_seconds",
        "How long executions this node claimed waited, from scheduled_at (due) to their claim, by queue "
        "(database time).", labels=["queue"])
    for queue, h in sorted(c.wait_seconds.items()):
        _observed(wait_seconds, [queue], h)

    circuit = GaugeMetricFamily(
        "jobwire_handler_circuit", "1 for the state each handler's circuit breaker is in (closed, open, half_open), "
        "0 for the others; shared by every node.", labels=["handler", "state"])
    failures = GaugeMetricFamily(
        "jobwire_handler_circuit_failures", "Consecutive connection failures, timeouts and 5xx replies of a handler "
        "(5 open its circuit).", labels=["handler"])
    adaptive = GaugeMetricFamily(
        "jobwire_handler_adaptive_limit", "An adaptive handler's effective limit of calls in flight (its jobs without "
        "a key).", labels=["handler"])
    for h in m.handlers:
        for state in CIRCUIT_STATES:
            circuit.add_metric([h.handler, state], int(h.circuit_state == state))
        failures.add_metric([h.handler], h.circuit_failures)
        if h.adaptive_limit is not None:
            adaptive.add_metric([h.handler], h.adaptive_limit)

    node = GaugeMetricFamily("jobwire_node_info", "This node (its id changes at every start).", labels=["node"])
    node.add_metric([m.node_id], 1)
    return [
        node, queue_jobs, oldest, paused,
        GaugeMetricFamily("jobwire_handler_calls_in_flight", "HTTP calls to handlers this node has in flight.",
                          value=m.in_flight),
        CounterMetricFamily("jobwire_jobs_enqueued_total", "Executions created through this node's API.",
                            value=c.jobs_enqueued),
        CounterMetricFamily("jobwire_claims_total", "Claim statements this node's dispatcher ran.", value=c.claims),
        CounterMetricFamily("jobwire_jobs_claimed_total", "Executions this node's dispatcher claimed.",
                            value=c.jobs_claimed),
        calls, completions, call_seconds, wait_seconds, circuit, failures, adaptive,
    ]


def _observed(family: HistogramMetricFamily, labels: list[str], h: Histogram) -> None:
    buckets = [(floatToGoString(bound), float(n)) for bound, n in h.cumulative()]
    family.add_metric(labels, buckets, h.total)
