"""Executions as the domain holds them (a job_executions row), the jobs that create them and the
filters that list them."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any
from uuid import UUID

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
    TOO_MANY_SUSPENSIONS = "too_many_suspensions"  # a 101st suspend (app/domain/waits.py)


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
    progress: Progress | None  # None until the handler reports some
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
    concurrency_key: str | None = None
    workflow_id: UUID | None = None  # a job of a workflow: the workflow, and its ref there
    workflow_ref: str | None = None


MAX_DEBOUNCE_SECONDS = 86400.0


@dataclass(frozen=True, slots=True)
class Debounce:
    """POST /v1/jobs `debounce`: while an execution of the handler and `key` waits, an enqueue
    goes to it (trailing: due delay_seconds from now, never past the run's first enqueue +
    max_delay_seconds, with the new payload and metadata); leading: the first runs at once and the
    enqueues within delay_seconds of the last one are dropped (the window never passes the first +
    max_delay_seconds)."""

    key: str
    delay_seconds: float
    max_delay_seconds: float | None = None  # None: MAX_DEBOUNCE_SECONDS
    mode: str = "trailing"  # or "leading"

    @property
    def cap_seconds(self) -> float:
        return min(self.max_delay_seconds or MAX_DEBOUNCE_SECONDS, MAX_DEBOUNCE_SECONDS)


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
    concurrency_key: str | None = None
    debounce: Debounce | None = None  # single enqueues only (EnqueueService); never sent to jobwire_enqueue


@dataclass(frozen=True, slots=True)
class ListFilter:
    """Every filter given must match. `metadata` (key, value): the metadata's top-level `key` holds
    the JSON string `value` (a number or a boolean of the same text does not match). The window is
    half-open: `created_after <= created_at < created_before`, so windows that share an end tile."""

    state: str | None = None
    queue: str | None = None
    handler: str | None = None
    job_id: str | None = None
    idempotency_key: str | None = None
    concurrency_key: str | None = None
    metadata: tuple[str, str] | None = None
    created_after: datetime | None = None
    created_before: datetime | None = None
