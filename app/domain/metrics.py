"""What /metrics reports: this node's counters and histograms, and the queues as the database sees them.

Labels are handler and queue names, which are validated names (domain/names.py) that exist in the
database or did while this node ran, so the series are bounded by handlers × queues (× outcomes).
"""

from __future__ import annotations

from bisect import bisect_left
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from app.domain.dispatch import ClaimedJob, OutcomeKind

# Seconds. A call ends within its attempt's timeout (120 s by default, up to a week), mostly well
# under a second; a queue's wait runs from milliseconds (claimed on the NOTIFY) to hours of backlog.
CALL_SECONDS_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0,
                        600.0)
WAIT_SECONDS_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0, 900.0,
                        1800.0, 3600.0, 10800.0, 43200.0, 86400.0)
CALL_OUTCOMES = tuple(kind.value for kind in OutcomeKind)
COMPLETION_OUTCOMES = ("succeeded", "failed")


@dataclass(slots=True)
class Histogram:
    """Observations by bucket: counts[i] holds those in (bounds[i-1], bounds[i]], the last one
    those above every bound (Prometheus's `le` buckets are the running sums)."""

    bounds: tuple[float, ...]
    counts: list[int] = field(default_factory=list)
    total: float = 0.0

    def __post_init__(self) -> None:
        self.counts = self.counts or [0] * (len(self.bounds) + 1)

    def observe(self, value: float) -> None:
        self.counts[bisect_left(self.bounds, value)] += 1
        self.total += value

    @property
    def count(self) -> int:
        return sum(self.counts)

    def cumulative(self) -> list[tuple[float, int]]:
        """(upper bound, observations at or below it), ending with (inf, count)."""
        running, out = 0, []
        for bound, n in zip((*self.bounds, float("inf")), self.counts, strict=True):
            running += n
            out.append((bound, running))
        return out


@dataclass
class NodeCounters:
    """What this node did since it started (Prometheus counters: they only go up). Written by
    the event loop only, so plain integers suffice."""

    jobs_enqueued: int = 0  # executions created through this node's API
    claims: int = 0  # claim statements run by this node's dispatcher
    jobs_claimed: int = 0
    calls: Counter[tuple[str, str, str]] = field(default_factory=Counter)  # (handler, queue, outcome kind)
    completions: Counter[tuple[str, str, str]] = field(default_factory=Counter)  # callbacks that moved one
    call_seconds: dict[str, Histogram] = field(default_factory=dict)  # by handler
    wait_seconds: dict[str, Histogram] = field(default_factory=dict)  # by queue: scheduled_at → claimed
    in_flight: Callable[[], int] = lambda: 0  # the dispatcher's HTTP calls now (set once it exists)

    def claimed(self, jobs: Sequence[ClaimedJob]) -> None:
        """A claim's jobs, each waiting from its scheduled_at to its started_at (both database time)."""
        self.jobs_claimed += len(jobs)
        for job in jobs:
            wait = max((job.started_at - job.scheduled_at).total_seconds(), 0.0)
            _histogram(self.wait_seconds, job.queue, WAIT_SECONDS_BUCKETS).observe(wait)

    def called(self, job: ClaimedJob, outcome: OutcomeKind, seconds: float) -> None:
        """A handler call that ended (`seconds` on this node's monotonic clock)."""
        self.calls[(job.handler, job.queue, outcome.value)] += 1
        _histogram(self.call_seconds, job.handler, CALL_SECONDS_BUCKETS).observe(seconds)

    def completed(self, handler: str, queue: str, outcome: str) -> None:
        """A completion callback that moved an execution (succeeded or failed)."""
        self.completions[(handler, queue, outcome)] += 1

    def queues(self) -> set[str]:
        """The queues this node dispatched from or took completions for."""
        return {q for _, q, _ in self.calls} | {q for _, q, _ in self.completions} | set(self.wait_seconds)


def _histogram(histograms: dict[str, Histogram], key: str, bounds: tuple[float, ...]) -> Histogram:
    found = histograms.get(key)
    if found is None:
        found = histograms[key] = Histogram(bounds)
    return found


def label_pairs(counts: Counter[tuple[str, str, str]]) -> list[tuple[str, str]]:
    """The (handler, queue) pairs seen, sorted: each is shown with every outcome, 0 included."""
    return sorted({(handler, queue) for handler, queue, _ in counts})


# The live states a queue's gauge shows, each for every queue (0 included).
QUEUE_STATES = ("enqueued_due", "enqueued_scheduled", "processing", "dead_letter")


@dataclass(frozen=True, slots=True)
class QueueDepth:
    queue: str
    paused: bool
    due: int  # ENQUEUED and due now: claimable unless paused
    scheduled: int  # ENQUEUED for later (delayed, backoff)
    processing: int
    dead_letter: int
    oldest_due_age_seconds: float | None  # database time

    @classmethod
    def empty(cls, queue: str) -> QueueDepth:
        """A queue with no live rows and no pause flag (a schedule's, or one this node has seen)."""
        return cls(queue, False, 0, 0, 0, 0, None)

    def by_state(self) -> tuple[tuple[str, int], ...]:
        """(state, count) for each of QUEUE_STATES."""
        return tuple(zip(QUEUE_STATES, (self.due, self.scheduled, self.processing, self.dead_letter), strict=True))


def every_queue(depths: Iterable[QueueDepth], others: Iterable[str]) -> list[QueueDepth]:
    """The depths given and an empty one for each other queue named, by name."""
    found = {d.queue: d for d in depths}
    for name in others:
        found.setdefault(name, QueueDepth.empty(name))
    return [found[name] for name in sorted(found)]
