"""Attempts: one dispatched attempt of an execution, and the end a guarded write gave one."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from app.domain.executions import Execution
from app.domain.states import JobState


def _millis(start: datetime | None, end: datetime | None) -> int | None:
    if start is None or end is None:
        return None
    return round((end - start).total_seconds() * 1000)


@dataclass(frozen=True, slots=True)
class AttemptEnd:
    """An attempt that a guarded write ended (a success, a failure, an abandonment): the
    execution as the write left it (for a retried attempt: ENQUEUED, at the next attempt) and
    the attempt it ended, as its log line tells it."""

    execution: Execution
    outcome: JobState  # SUCCEEDED, FAILED or ABANDONED: the attempt's own outcome
    attempt: int
    started_at: datetime | None
    ended_at: datetime
    node: str | None  # the node that made the attempt's call

    @property
    def duration_ms(self) -> int | None:
        return _millis(self.started_at, self.ended_at)


@dataclass(frozen=True, slots=True)
class Attempt:
    """One dispatched attempt of an execution: its own outcome (SUCCEEDED, FAILED, ABANDONED,
    CANCELLED; PROCESSING while in flight, ended_at None), never DEAD_LETTER."""

    attempt: int
    state: JobState
    started_at: datetime
    ended_at: datetime | None
    node: str | None
    error_type: str | None
    error: str | None
    http_status: int | None

    @property
    def duration_ms(self) -> int | None:
        return _millis(self.started_at, self.ended_at)
