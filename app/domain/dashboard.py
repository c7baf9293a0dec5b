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


def per_minute(now_minute: datetime, counts: list[OutcomeCount], minutes: int) -> list[MinuteOutcomes]:
    """Every minute of the window ending at `now_minute`, oldest first, with its counts (a minute
    without outcomes is there with none)."""
    by_minute: dict[datetime, dict[str, int]] = {}
    for c in counts:
        by_minute.setdefault(c.minute, {})[c.type] = c.count
    start = now_minute - timedelta(minutes=minutes - 1)
    return [MinuteOutcomes(m, by_minute.get(m, {})) for m in (start + timedelta(minutes=i) for i in range(minutes))]


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
