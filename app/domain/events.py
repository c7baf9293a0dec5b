"""Transition events: the typed rows of job_events (attempt outcomes and user actions)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any


class EventType(StrEnum):
    """The types of the transition events GET /v1/executions/{id}/events lists: attempt
    outcomes and user actions (the rows of inserts, claims and re-enqueues have none)."""

    SUCCEEDED = "execution.succeeded"
    FAILED = "execution.failed"
    ABANDONED = "execution.abandoned"
    DEAD_LETTERED = "execution.dead_lettered"
    CANCELLED = "execution.cancelled"
    RETRIED = "execution.retried"  # a manual retry
    # A workflow's end (its id stands where an execution's would: the row's execution_id).
    WORKFLOW_SUCCEEDED = "workflow.succeeded"
    WORKFLOW_FAILED = "workflow.failed"
    WORKFLOW_CANCELLED = "workflow.cancelled"


@dataclass(frozen=True, slots=True)
class Event:
    """A typed transition event: `data` is the curated event of DESIGN §4 (plus `retry_at` for a
    failed or abandoned attempt that another follows)."""

    id: int
    type: EventType
    occurred_at: datetime
    data: dict[str, Any]
