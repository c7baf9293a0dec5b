"""What /metrics reports: this node's counters, and the queues as the database sees them."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field


@dataclass
class NodeCounters:
    """What this node did since it started (Prometheus counters: they only go up). Written by
    the event loop only, so plain integers suffice."""

    jobs_enqueued: int = 0  # executions created through this node's API
    claims: int = 0  # claim statements run by this node's dispatcher
    jobs_claimed: int = 0
    calls: Counter[str] = field(default_factory=Counter)  # handler calls by outcome kind
    completions: Counter[str] = field(default_factory=Counter)  # callbacks that moved an execution
    in_flight: Callable[[], int] = lambda: 0  # the dispatcher's HTTP calls now (set once it exists)


@dataclass(frozen=True, slots=True)
class QueueDepth:
    queue: str
    paused: bool
    due: int  # ENQUEUED and due now: claimable unless paused
    scheduled: int  # ENQUEUED for later (delayed, backoff)
    processing: int
    dead_letter: int
    oldest_due_age_seconds: float | None  # database time
