"""/metrics as Prometheus reads it: the node's counters and histograms rendered, then parsed back
with prometheus_client's own parser — outcomes by handler and queue, 0 for every outcome of a pair
seen, cumulative `le` buckets ending at +Inf, every state of every queue."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from uuid import uuid4

from prometheus_client.parser import text_string_to_metric_families

from app.api.health.metrics import render
from app.domain.dispatch import ClaimedJob, OutcomeKind
from app.domain.metrics import CALL_SECONDS_BUCKETS, Histogram, NodeCounters, QueueDepth, every_queue
from app.services.metrics import MetricsSnapshot

T0 = datetime(2026, 12, 1, tzinfo=UTC)


def job(handler: str, queue: str, waited: float = 0.0) -> ClaimedJob:
    return ClaimedJob(id=uuid4(), job_id="j", job_type="DELAYED", queue=queue, attempt=0, max_attempts=5, payload=None,
                      parameters=None, metadata=None, scheduled_at=T0, started_at=T0 + timedelta(seconds=waited),
                      deadline_at=T0 + timedelta(seconds=120), seconds_left=120.0, handler=handler,
                      handler_url="http://127.0.0.1:9/", handler_secret=None)


def parsed(snapshot: MetricsSnapshot) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    text = render(snapshot).decode()
    samples: dict[tuple[str, frozenset[tuple[str, str]]], float] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            samples[(sample.name, frozenset(sample.labels.items()))] = sample.value
    return samples


def snapshot(counters: NodeCounters, queues: list[QueueDepth] | None = None) -> MetricsSnapshot:
    return MetricsSnapshot("node-1", counters, 0, queues or [])


def test_call_outcomes_are_counted_by_handler_and_queue_with_every_outcome_shown() -> None:
    c = NodeCounters()
    for outcome in (OutcomeKind.SUCCEEDED, OutcomeKind.SUCCEEDED, OutcomeKind.FAILED):
        c.called(job("mail", "fast"), outcome, 0.02)
    c.called(job("mail", "slow"), OutcomeKind.ACCEPTED, 0.3)
    c.completed("mail", "slow", "succeeded")
    s = parsed(snapshot(c))

    def calls(queue: str, outcome: str) -> float | None:
        return s.get(("jobwire_handler_calls_total", frozenset({("handler", "mail"), ("queue", queue),
                                                                  ("outcome", outcome)})))

    assert [calls("fast", o) for o in ("succeeded", "accepted", "failed", "abandoned")] == [2, 0, 1, 0]
    assert [calls("slow", o) for o in ("succeeded", "accepted", "failed", "abandoned")] == [0, 1, 0, 0]
    assert s[("jobwire_callback_completions_total", frozenset({("handler", "mail"), ("queue", "slow"),
                                                               ("outcome", "succeeded")}))] == 1
    assert s[("jobwire_callback_completions_total", frozenset({("handler", "mail"), ("queue", "slow"),
                                                               ("outcome", "failed")}))] == 0


def test_call_durations_and_queue_waits_are_histograms_with_cumulative_buckets() -> None:
    c = NodeCounters()
    for seconds in (0.004, 0.02, 0.02, 7.0, 9000.0):
        c.called(job("mail", "q"), OutcomeKind.SUCCEEDED, seconds)
    c.claimed([job("mail", "q", waited=0.0), job("mail", "q", waited=90.0), job("sms", "other", waited=3.0)])
    s = parsed(snapshot(c))

    def bucket(name: str, label: tuple[str, str], le: str) -> float:
        return s[(f"{name}_bucket", frozenset({label, ("le", le)}))]

    durations = "jobwire_handler_call_duration_seconds"
    bounds = ("0.005", "0.025", "5.0", "10.0", "600.0", "+Inf")
    assert [bucket(durations, ("handler", "mail"), le) for le in bounds] == [1, 3, 3, 4, 4, 5]
    assert s[(f"{durations}_count", frozenset({("handler", "mail")}))] == 5
    assert s[(f"{durations}_sum", frozenset({("handler", "mail")}))] == 0.004 + 0.02 + 0.02 + 7.0 + 9000.0
    waits = "jobwire_queue_wait_seconds"
    assert [bucket(waits, ("queue", "q"), le) for le in ("0.005", "60.0", "300.0", "+Inf")] == [1, 1, 2, 2]
    assert s[(f"{waits}_count", frozenset({("queue", "other")}))] == 1
    assert s[("jobwire_jobs_claimed_total", frozenset())] == 3


def test_a_value_on_a_bucket_bound_counts_in_that_bucket() -> None:
    h = Histogram(CALL_SECONDS_BUCKETS)
    h.observe(0.1)
    assert dict(h.cumulative())[0.05] == 0 and dict(h.cumulative())[0.1] == 1


def test_every_state_of_every_queue_is_shown_zero_included() -> None:
    queues = every_queue([QueueDepth("busy", False, 2, 1, 0, 0, 12.5)], ["from-a-schedule", "busy"])
    s = parsed(snapshot(NodeCounters(), queues))
    for queue in ("busy", "from-a-schedule"):
        for state in ("enqueued_due", "enqueued_scheduled", "processing", "dead_letter"):
            assert ("jobwire_queue_jobs", frozenset({("queue", queue), ("state", state)})) in s
    assert s[("jobwire_queue_jobs", frozenset({("queue", "busy"), ("state", "enqueued_due")}))] == 2
    assert s[("jobwire_queue_jobs", frozenset({("queue", "from-a-schedule"), ("state", "processing")}))] == 0
    assert s[("jobwire_queue_oldest_due_age_seconds", frozenset({("queue", "busy")}))] == 12.5
    assert ("jobwire_queue_oldest_due_age_seconds", frozenset({("queue", "from-a-schedule")})) not in s
