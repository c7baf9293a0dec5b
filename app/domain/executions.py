"""Value objects: executions, handlers, new jobs and dispatch outcomes."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any
from uuid import UUID

from app.domain.handler_secrets import HandlerSecret
from app.domain.states import JobState


class JobType(StrEnum):
    DELAYED = "DELAYED"
    CRON = "CRON"
    BATCH = "BATCH"  # reserved


class ErrorType(StrEnum):
    HTTP_STATUS = "http_status"
    CONNECTION = "connection"
    RESPONSE_TOO_LARGE = "response_too_large"
    HANDLER_FAILED = "handler_failed"
    # JOBWIRE_HANDLER_NETWORKS refuses every address of the handler's host: nothing was sent, not retried.
    BLOCKED_DESTINATION = "blocked_destination"
    ABANDONED_DEADLINE = "abandoned_deadline"
    ABANDONED_NODE = "abandoned_node"
    ABANDONED_SHUTDOWN = "abandoned_shutdown"


@dataclass(frozen=True, slots=True)
class Progress:
    total: int = 0
    succeeded: int = 0
    failed: int = 0
    status: str | None = None

    @property
    def percentage(self) -> int:
        if self.total <= 0:
            return 0
        return (self.succeeded + self.failed) * 100 // self.total


@dataclass(frozen=True, slots=True)
class Execution:
    id: UUID
    job_id: str
    job_type: JobType
    handler: str
    queue: str
    state: JobState
    attempt: int
    max_attempts: int
    priority: int
    stateful: bool
    payload: Any
    parameters: Any
    metadata: Any
    result: Any
    progress: Progress
    scheduled_at: datetime
    created_at: datetime
    started_at: datetime | None
    completed_at: datetime | None
    deadline_at: datetime | None
    locked_by: str | None
    last_error: str | None
    error_type: str | None
    timeout_seconds: float | None = None
    max_duration_seconds: float | None = None


@dataclass(frozen=True, slots=True)
class Handler:
    name: str
    url: str
    timeout_seconds: float | None
    max_concurrency: int | None
    stateful: bool
    created_at: datetime
    updated_at: datetime
    # Its signing secrets that still sign (none expired), newest first; never their values.
    secrets: tuple[HandlerSecret, ...] = ()
    # The signing secret (whsec_…) in plain text: only on the handler a create returns (shown once).
    secret: str = field(repr=False, default="")


@dataclass(frozen=True, slots=True)
class Node:
    server_id: str
    started_at: datetime
    last_heartbeat: datetime
    in_flight: int


@dataclass(frozen=True, slots=True)
class QueueStatus:
    name: str
    paused: bool
    counts: dict[str, int]
    oldest_claimable_age_seconds: float | None


@dataclass(frozen=True, slots=True)
class NewJob:
    """A validated enqueue request, defaults applied, ready to insert. Its idempotency
    fingerprint is computed where it is inserted (jobwire_enqueue, in the database)."""

    handler: str
    job_id: str
    queue: str = "default"
    priority: int = 0
    payload: Any = None
    parameters: Any = None
    metadata: Any = None
    run_at: datetime | None = None
    delay_seconds: float | None = None
    max_attempts: int = 5
    stateful: bool = False
    timeout_seconds: float | None = None
    max_duration_seconds: float | None = None
    idempotency_key: str | None = None
    # A W3C traceparent (the enqueue request's header) stored as metadata.context.traceparent
    # unless the metadata sets one; not part of the idempotency fingerprint.
    traceparent: str | None = None


@dataclass(frozen=True, slots=True)
class ListFilter:
    state: str | None = None
    queue: str | None = None
    handler: str | None = None
    job_id: str | None = None


@dataclass(frozen=True, slots=True)
class ClaimedJob:
    """What the dispatcher needs to make one HTTP call. payload, parameters and metadata are
    JSON values, or (as the claim returns them) orjson fragments of their stored JSON text."""

    id: UUID
    job_id: str
    job_type: str
    queue: str
    attempt: int
    max_attempts: int
    payload: Any
    parameters: Any
    metadata: Any
    scheduled_at: datetime
    started_at: datetime
    deadline_at: datetime
    seconds_left: float
    handler: str
    handler_url: str | None
    handler_secret: str | None  # the newest of handler_secrets (what a node of the version before 0011 signs with)
    # Every active signing secret of the handler as stored (whsec_… or jwenc1:…), newest first: each
    # signs the call. Made without them (tests), the call signs with handler_secret alone.
    handler_secrets: tuple[str, ...] = ()


class OutcomeKind(StrEnum):
    SUCCEEDED = "succeeded"
    ACCEPTED = "accepted"  # 202: the handler now holds the execution
    FAILED = "failed"
    ABANDONED = "abandoned"  # the call was still open at the deadline


@dataclass(frozen=True, slots=True)
class Outcome:
    kind: OutcomeKind
    result: Any = None
    error: str | None = None
    error_type: str | None = None
    retryable: bool = True
    retry_after: float | None = None
    # The handler's HTTP status when its reply decided the outcome (a 202 keeps it only here: the
    # attempt's outcome comes later, by callback, with no status of its own).
    http_status: int | None = None


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


class EventType(StrEnum):
    """The types of the transition events GET /v1/executions/{id}/events lists: attempt
    outcomes and user actions (the rows of inserts, claims and re-enqueues have none)."""

    SUCCEEDED = "execution.succeeded"
    FAILED = "execution.failed"
    ABANDONED = "execution.abandoned"
    DEAD_LETTERED = "execution.dead_lettered"
    CANCELLED = "execution.cancelled"
    RETRIED = "execution.retried"  # a manual retry


@dataclass(frozen=True, slots=True)
class Event:
    """A typed transition event: `data` is the curated event of DESIGN §4 (plus `retry_at` for a
    failed or abandoned attempt that another follows)."""

    id: int
    type: EventType
    occurred_at: datetime
    data: dict[str, Any]


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
