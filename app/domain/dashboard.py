"""What the dashboard's overview and execution pages show beside the API's resources (app/ui)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from uuid import UUID

from app.domain.events import EventType
from app.domain.metrics import QueueDepth
from app.domain.nodes import Node

# The attempt outcomes the overview charts, and those of them that are failures. A dead-lettering
# is not one: it is the execution's end, written beside the failed or abandoned attempt it follows.
OUTCOMES = (EventType.SUCCEEDED, EventType.FAILED, EventType.ABANDONED)
FAILURES = (EventType.FAILED, EventType.ABANDONED)


@dataclass(frozen=True, slots=True)
class OutcomeCount:
    minute: datetime
    handler: str | None
    type: str
    count: int


@dataclass(frozen=True, slots=True)
class MinuteOutcomes:
    """One minute of the chart: the outcomes counted in it, by type."""

    minute: datetime
    counts: dict[str, int] = field(default_factory=dict)

    @property
    def total(self) -> int:
        return sum(self.counts.values())


@dataclass(frozen=True, slots=True)
class FailedAttempt:
    execution_id: UUID
    type: str
    occurred_at: datetime
    attempt: int | None
    node: str | None
    http_status: int | None
    error: str | None
    handler: str | None
    queue: str | None
    job_id: str | None
    error_type: str | None


@dataclass(frozen=True, slots=True)
class Relative:
    """A parent or child of an execution in its workflow."""

    ref: str | None
    execution_id: UUID
    state: str


@dataclass(frozen=True, slots=True)
class Overview:
    queues: list[QueueDepth]
    nodes: list[Node]
    minutes: list[MinuteOutcomes]  # oldest first, every minute of the window (empty ones too)
    failures: list[FailedAttempt]


class OutcomeLedger:
    """The attempt outcomes of the window's minutes by (handler, type), kept between reads: a
    minute that has ended is read once, and each read takes only the minutes from the one before
    the last read's current minute (an outcome is timed at its transaction's start, so one that
    commits a little after its minute ended is still counted). The chart and the handlers'
    failure rates are sums of it: the window's events are read once per node, not per refresh."""

    def __init__(self, minutes: int) -> None:
        self.minutes = minutes
        self.now_minute: datetime | None = None
        self.by_minute: dict[datetime, dict[tuple[str | None, str], int]] = {}

    def since(self) -> datetime | None:
        """The first minute to read again (None: the whole window, nothing is kept yet)."""
        return None if self.now_minute is None else self.now_minute - timedelta(minutes=1)

    def record(self, now_minute: datetime, since: datetime | None, counts: list[OutcomeCount]) -> None:
        """The counts read from `since` (None: the window) to `now_minute`, replacing those minutes."""
        start = now_minute - timedelta(minutes=self.minutes - 1)
        first = start if since is None else max(since, start)
        kept = {m: c for m, c in self.by_minute.items() if start <= m < first}
        for c in counts:
            if c.minute >= first:
                kept.setdefault(c.minute, {})[(c.handler, c.type)] = c.count
        self.by_minute, self.now_minute = kept, now_minute

    def per_minute(self) -> list[MinuteOutcomes]:
        """Every minute of the window, oldest first, with its counts by type (every handler's; a
        minute without outcomes is there with none)."""
        if self.now_minute is None:
            return []
        start = self.now_minute - timedelta(minutes=self.minutes - 1)
        out = []
        for m in (start + timedelta(minutes=i) for i in range(self.minutes)):
            counts: dict[str, int] = {}
            for (_, kind), n in self.by_minute.get(m, {}).items():
                counts[kind] = counts.get(kind, 0) + n
            out.append(MinuteOutcomes(m, counts))
        return out

    def by_handler(self) -> list[tuple[str, str, int]]:
        """(handler, type, count) over the window."""
        totals: dict[tuple[str, str], int] = {}
        for counts in self.by_minute.values():
            for (handler, kind), n in counts.items():
                if handler is not None:
                    totals[(handler, kind)] = totals.get((handler, kind), 0) + n
        return [(h, k, n) for (h, k), n in totals.items()]


@dataclass(frozen=True, slots=True)
class HandlerActivity:
    """A handler's calls in flight now and its attempt outcomes of the recent window, by type."""

    in_flight: int = 0
    outcomes: dict[str, int] = field(default_factory=dict)

    @property
    def attempts(self) -> int:
        return sum(self.outcomes.values())

    @property
    def failure_rate(self) -> float | None:
        """The share of the window's attempts that failed (None: no attempt ended in it)."""
        if not self.attempts:
            return None
        return sum(self.outcomes.get(t.value, 0) for t in FAILURES) / self.attempts


def activity_by_handler(in_flight: dict[str, int], outcomes: list[tuple[str, str, int]]) -> dict[str, HandlerActivity]:
    """Each handler's activity from the in-flight counts and (handler, type, count) rows."""
    counts: dict[str, dict[str, int]] = {}
    for handler, kind, n in outcomes:
        counts.setdefault(handler, {})[kind] = n
    return {h: HandlerActivity(in_flight.get(h, 0), counts.get(h, {})) for h in set(in_flight) | set(counts)}
