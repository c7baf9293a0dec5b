"""Response models of executions (DESIGN §4: "an execution is shown as …"), their logs, attempts
and transition events."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal
from uuid import UUID

from pydantic import Field

from app.api.fields import ResponseModel, StrictModel
from app.domain.events import EventType
from app.domain.executions import JobType
from app.domain.states import JobState

# The names as the document shows them (an enum of strings), from the enums that own them.
StateName = Literal[tuple(s.value for s in JobState)]  # type: ignore[valid-type]
JobTypeName = Literal[tuple(t.value for t in JobType)]  # type: ignore[valid-type]
EventTypeName = Literal[tuple(t.value for t in EventType)]  # type: ignore[valid-type]


class ProgressOut(ResponseModel):
    """The handler's last progress report (POST {callback.url}/progress); fields it never sent are 0
    (counts) or null (status)."""

    total: int
    succeeded: int
    failed: int
    status: str | None
    percentage: int = Field(description="floor((succeeded + failed) * 100 / total); 0 while total is 0")


class WorkflowRefOut(ResponseModel):
    id: UUID = Field(description="the workflow (GET /v1/workflows/{id})")
    ref: str = Field(description="the job's name in the workflow, which depends_on names")


class ExecutionOut(ResponseModel):
    id: UUID
    job_id: str = Field(description="the caller's name for the job (`job_id` when enqueued, the schedule's for "
                                    "a CRON execution), else the execution's own id as text")
    job_type: JobTypeName
    handler: str
    queue: str
    state: StateName
    attempt: int
    max_attempts: int
    priority: int
    stateful: bool
    payload: Any = Field(description="as enqueued: any JSON value")
    parameters: Any = Field(description="as enqueued: a JSON object, or null")
    metadata: Any = Field(description="as enqueued (a JSON object, or null), with `context.traceparent` when a "
                                      "trace context came with the job")
    result: Any = Field(description="the handler's `result` (any JSON value); null until a reply carries one")
    progress: ProgressOut | None = Field(
        description="the handler's last progress report; null until it reports some (a heartbeat is none)")
    scheduled_at: datetime
    created_at: datetime
    started_at: datetime | None
    completed_at: datetime | None
    deadline_at: datetime | None
    locked_by: str | None
    last_error: str | None
    error_type: str | None
    concurrency_key: str | None = Field(None, description="the key it shares its handler's per-key limits with; "
                                                           "null: none")
    workflow: WorkflowRefOut | None = Field(None, description="the workflow the job belongs to (POST /v1/workflows); "
                                                               "null: none")
    debounced: bool | None = Field(
        None, description="in the answer to a POST /v1/jobs with `debounce` only (absent elsewhere): true when it "
                          "sent the enqueue to the execution that was waiting (or, leading, that ran first), which "
                          "is the answer (200); false when it made a new one (201)")


class ExecutionPage(ResponseModel):
    items: list[ExecutionOut]
    next_cursor: str | None


class SignalIn(StrictModel):
    payload: Any = Field(None, description="any JSON value, at most 64 KiB; handed to the wait that consumes it")


class SignalSent(ResponseModel):
    id: int = Field(description="the signal's id (GET …/signals lists it)")
    woke: bool = Field(description="true when the execution was waiting for it: resumed now, the signal consumed; "
                                   "false: kept until a wait that names it")


class SignalOut(ResponseModel):
    id: int
    name: str
    payload: Any
    sent_at: datetime
    consumed_at: datetime | None = Field(description="when a wait consumed it; null while it is kept")


class SignalPage(ResponseModel):
    items: list[SignalOut]
    next_cursor: str | None


class LogOut(ResponseModel):
    attempt: int = Field(description="the attempt whose handler wrote it")
    level: Literal["INFO", "WARN", "ERROR"]
    message: str
    logged_at: datetime


class LogPage(ResponseModel):
    items: list[LogOut]
    next_cursor: str | None


class AttemptOut(ResponseModel):
    attempt: int = Field(description="zero-based")
    state: Literal["PROCESSING", "SUCCEEDED", "FAILED", "ABANDONED", "CANCELLED"] = Field(
        description="the attempt's own outcome (never DEAD_LETTER: the execution's state after its last "
                    "attempt); PROCESSING while in flight. The last outcome wins: a late success after "
                    "ABANDONED makes the attempt SUCCEEDED")
    started_at: datetime = Field(description="when it was claimed")
    ended_at: datetime | None = Field(description="when its outcome was recorded; null while in flight")
    duration_ms: int | None = Field(description="ended_at - started_at; null while in flight")
    node: str | None = Field(description="the node that made the call")
    error_type: str | None = Field(description="of a FAILED or ABANDONED attempt")
    error: str | None = Field(description="a FAILED or ABANDONED attempt's own error text (its first 2,000 "
                                          "characters, then `…[truncated N chars]`)")
    http_status: int | None = Field(description="the handler's status when its reply decided the outcome; null "
                                                "for a connection error, an abandonment, a cancel, and an outcome "
                                                "reported by callback after a 202")


class AttemptList(ResponseModel):
    items: list[AttemptOut]


class TransitionEventOut(ResponseModel):
    """The curated transition event (DESIGN §4): no payload, result, raw error text or parameters."""

    execution_id: UUID
    job_id: str
    job_type: JobTypeName
    queue: str
    handler: str
    new_state: StateName
    attempt: int
    max_attempts: int
    error_type: str | None
    scheduled_at: datetime
    created_at: datetime
    started_at: datetime | None
    completed_at: datetime | None
    metadata: Any
    retry_at: datetime | None = Field(None, description="only on a failed or abandoned attempt that another "
                                                        "follows: when that one is due")


class WorkflowEventOut(ResponseModel):
    """A workflow's end (workflow.succeeded, .failed, .cancelled): the workflow as it ended."""

    workflow_id: UUID
    name: str | None
    state: Literal["SUCCEEDED", "FAILED", "CANCELLED"]
    counts: dict[str, int] = Field(description="its jobs by state")
    metadata: Any
    created_at: datetime
    completed_at: datetime


class EventOut(ResponseModel):
    id: int = Field(description="the event's id; ids grow with time within one execution")
    type: EventTypeName = Field(  # type: ignore[valid-type]
        description="an attempt's outcome, its dead letter, or a user's action (execution.retried: a manual retry); "
                    "a workflow's end (workflow.*)")
    occurred_at: datetime
    data: TransitionEventOut | WorkflowEventOut = Field(
        description="execution.*: the curated transition event; workflow.*: the workflow as it ended")


class EventPage(ResponseModel):
    items: list[EventOut]
    next_cursor: str | None


class BlockerOut(ResponseModel):
    """One reason the execution is not running now; the fields beside `reason` are its data."""

    reason: Literal["scheduled", "queue_paused", "handler_concurrency", "key_concurrency", "rate_limit", "key_paused",
                    "circuit_open", "retry_after", "adaptive_limit", "stateful", "no_node_serves_queue",
                    "dependencies", "suspended"] = Field(
        description="`scheduled`: due only at `until`; `queue_paused`: its `queue` is paused; `handler_concurrency`: "
                    "its handler has `in_flight` calls of its `limit` (max_concurrency); `key_concurrency`: its "
                    "concurrency `key` has `in_flight` calls of its handler's `limit` (key_concurrency); "
                    "`rate_limit`: its handler's rate_limit (or, with `key`, its key's key_rate_limit) lets the next "
                    "call start at `next_slot`; `key_paused`: its `key` is paused; `circuit_open`: its handler's "
                    "circuit breaker lets no call out until `until` (then one probe); `retry_after`: a 429 or 503 "
                    "with Retry-After holds its handler (or, with `key`, its key) until `until`; `adaptive_limit`: "
                    "its adaptive handler (or, with `key`, its key) has `in_flight` calls of its effective `limit`; "
                    "`stateful`: another stateful "
                    "job of its queue, `execution_id` in `state`, runs (PROCESSING) or goes first (ENQUEUED); "
                    "`no_node_serves_queue`: no live node claims from its `queue` (JOBWIRE_QUEUES); `dependencies`: "
                    "a WAITING job of a workflow waits for its parents `refs`, not terminal yet; `suspended`: its "
                    "handler suspended it until `until`, one of `signals`, the end of its spawned `children` (how many "
                    "are not terminal yet; null when it does not wait for them), or `timeout_at`")
    until: datetime | None = None
    queue: str | None = None
    in_flight: int | None = None
    limit: int | None = None
    execution_id: UUID | None = None
    state: StateName | None = None
    key: str | None = None
    next_slot: datetime | None = None
    refs: list[str] | None = None
    signals: list[str] | None = None
    timeout_at: datetime | None = None
    children: int | None = None


class BlockerList(ResponseModel):
    state: StateName = Field(description="the execution's state: only an ENQUEUED one can be held back, or a "
                                         "WAITING one by its dependencies")
    items: list[BlockerOut] = Field(description="every reason it is not running now, read in one snapshot; empty "
                                                "when nothing holds it back (it is due and waits only for a free slot "
                                                "of a node) or when it is neither ENQUEUED nor WAITING")
