"""Request and response models. Requests refuse unknown fields and coerce nothing."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any, Literal

from pydantic import (
    AwareDatetime,
    BaseModel,
    ConfigDict,
    Field,
    Strict,
    StringConstraints,
    ValidationInfo,
    field_validator,
)

from app.domain.executions import NewJob
from app.domain.logs import MAX_ENTRIES_PER_CALL
from app.domain.names import NAME_PATTERN
from app.domain.states import ABANDONED_ERROR_PREFIX

SEVEN_DAYS = 7 * 86400
INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1

Name = Annotated[str, Strict(), StringConstraints(pattern=NAME_PATTERN)]
Seconds = Annotated[float, Strict(), Field(gt=0, le=SEVEN_DAYS)]  # Strict: ints pass, "5" and true do not
Int32 = Annotated[int, Strict(), Field(ge=INT32_MIN, le=INT32_MAX)]
JsonObject = dict[str, Any]


class StrictModel(BaseModel):
    model_config = ConfigDict(extra="forbid")


class HandlerIn(StrictModel):
    url: Annotated[str, Strict(), StringConstraints(pattern=r"^https?://[^\s]+$", max_length=2048)]
    timeout_seconds: Seconds | None = None
    max_concurrency: Annotated[int, Strict(), Field(ge=1, le=1_000_000)] | None = None
    stateful: Annotated[bool, Strict()] = False


class HandlerOut(BaseModel):
    name: str
    url: str
    timeout_seconds: float | None
    max_concurrency: int | None
    stateful: bool
    created_at: datetime
    updated_at: datetime
    secret: str | None = Field(
        None, description="Signing secret (whsec_…), in the response that created the handler only.")


class HandlerList(BaseModel):
    items: list[HandlerOut]


def _within_utc_years(value: datetime | None) -> datetime | None:
    # An offset can push a valid wall time outside Python's years 1-9999 in UTC.
    if value is not None:
        try:
            value.astimezone(UTC)
        except OverflowError:
            raise ValueError("must fall within the years 1-9999 in UTC") from None
    return value


class JobIn(StrictModel):
    handler: Name
    payload: Any = None
    job_id: Name | None = None
    queue: Name = "default"
    priority: Int32 = 0
    run_at: AwareDatetime | None = Field(None, description="RFC 3339 time with a zone; exclusive with delay_seconds")
    delay_seconds: Annotated[float, Strict(), Field(ge=0, le=365 * 86400)] | None = None
    max_attempts: Annotated[int, Strict(), Field(ge=1, le=1000)] = 5
    stateful: Annotated[bool, Strict()] = False
    timeout_seconds: Seconds | None = None
    max_duration_seconds: Seconds | None = None
    parameters: JsonObject | None = None
    metadata: JsonObject | None = None
    idempotency_key: Name | None = None

    @field_validator("run_at", mode="before")
    @classmethod
    def _run_at_is_text(cls, value: Any) -> Any:
        if value is not None and not isinstance(value, str):
            raise ValueError("must be an RFC 3339 string with a time zone")
        return value

    @field_validator("run_at")
    @classmethod
    def _run_at_in_range(cls, value: datetime | None) -> datetime | None:
        return _within_utc_years(value)

    @field_validator("delay_seconds")
    @classmethod
    def _one_start(cls, value: float | None, info: ValidationInfo) -> float | None:
        # A field validator (not a model one) so the error names a field: `delay_seconds`.
        if value is not None and info.data.get("run_at") is not None:
            raise ValueError("give run_at or delay_seconds, not both")
        return value

    def to_new_job(self, idempotency_key: str | None = None, traceparent: str | None = None) -> NewJob:
        """The job to insert. Its idempotency fingerprint (the request with defaults applied,
        without the key and the traceparent) is computed by jobwire_enqueue in the database."""
        return NewJob(
            handler=self.handler,
            job_id=self.job_id,  # type: ignore[arg-type]  # None → the execution id (in SQL)
            queue=self.queue,
            priority=self.priority,
            payload=self.payload,
            parameters=self.parameters,
            metadata=self.metadata,
            run_at=self.run_at,
            delay_seconds=self.delay_seconds,
            max_attempts=self.max_attempts,
            stateful=self.stateful,
            timeout_seconds=self.timeout_seconds,
            max_duration_seconds=self.max_duration_seconds,
            idempotency_key=idempotency_key or self.idempotency_key,
            traceparent=traceparent,
        )


class BatchIn(StrictModel):
    jobs: Annotated[list[JobIn], Field(min_length=1, max_length=1000)]


class ProgressOut(BaseModel):
    total: int
    succeeded: int
    failed: int
    status: str | None
    percentage: int


class ExecutionOut(BaseModel):
    id: str
    job_id: str
    job_type: Literal["DELAYED", "CRON", "BATCH"]
    handler: str
    queue: str
    state: Literal["ENQUEUED", "PROCESSING", "SUCCEEDED", "FAILED", "CANCELLED", "ABANDONED", "DEAD_LETTER"]
    attempt: int
    max_attempts: int
    priority: int
    stateful: bool
    payload: Any
    parameters: Any
    metadata: Any
    result: Any
    progress: ProgressOut
    scheduled_at: datetime
    created_at: datetime
    started_at: datetime | None
    completed_at: datetime | None
    deadline_at: datetime | None
    locked_by: str | None
    last_error: str | None
    error_type: str | None


class ExecutionPage(BaseModel):
    items: list[ExecutionOut]
    next_cursor: str | None


class BatchOut(BaseModel):
    items: list[ExecutionOut]


class CompletionError(StrictModel):
    message: Annotated[str, Strict()] = ""
    type: Annotated[str, Strict(), StringConstraints(max_length=100)] | None = Field(
        None, description="the attempt's error_type (default `handler_failed`). Types beginning with "
                          "`abandoned_` are Jobwire's own (an attempt it abandoned, which a late success may "
                          "still win over) and are refused with 422")

    @field_validator("type")
    @classmethod
    def _not_an_abandonment(cls, value: str | None) -> str | None:
        if value is not None and value.startswith(ABANDONED_ERROR_PREFIX):
            raise ValueError(f"types beginning with {ABANDONED_ERROR_PREFIX!r} are reserved for attempts "
                             "Jobwire abandoned itself")
        return value


class CompleteIn(StrictModel):
    outcome: Literal["succeeded", "failed"]
    result: Any = None
    error: CompletionError | None = None
    retryable: Annotated[bool, Strict()] = True


def _rfc3339_text(value: Any) -> Any:
    if value is not None and not isinstance(value, str):
        raise ValueError("must be an RFC 3339 string with a time zone")
    return value




class LogEntryIn(StrictModel):
    level: Literal["INFO", "WARN", "ERROR"]
    message: Annotated[str, Strict()] | None = Field(
        description="stored as sent, except: null → `<null>`; C0 control characters other than \\n \\r \\t "
                    "removed; then over 8192 code points → the first 8192 + `…[truncated N chars]`")
    logged_at: AwareDatetime | None = Field(None, description="RFC 3339 with a zone; default: when Jobwire stores it")

    _logged_at_is_text = field_validator("logged_at", mode="before")(_rfc3339_text)
    _logged_at_in_range = field_validator("logged_at")(_within_utc_years)


class LogsIn(StrictModel):
    entries: Annotated[list[LogEntryIn], Field(max_length=MAX_ENTRIES_PER_CALL,
                                               description=f"at most {MAX_ENTRIES_PER_CALL} per call")]


class LogsStored(BaseModel):
    stored: int = Field(description="entries stored by this call")


class LogOut(BaseModel):
    attempt: int = Field(description="the attempt whose handler wrote it")
    level: Literal["INFO", "WARN", "ERROR"]
    message: str
    logged_at: datetime


class LogPage(BaseModel):
    items: list[LogOut]
    next_cursor: str | None


class StepIn(StrictModel):
    result: Any = None


class StepOut(BaseModel):
    name: str
    result: Any
    completed_at: datetime


ExecutionModeName = Literal["SINGLE_INSTANCE", "EVERY_INSTANCE"]
OverlapName = Literal["SKIP", "QUEUE_ONE"]
MisfireName = Literal["FIRE_ONCE", "SKIP"]


class ScheduleIn(StrictModel):
    cron: Annotated[str, Strict(), StringConstraints(max_length=1000)] = Field(
        description="6 fields with seconds first (`0 0 8 * * *`) or the standard 5 (`0 8 * * *`); Vixie semantics")
    timezone: Annotated[str, Strict(), StringConstraints(max_length=100)] = Field(
        "UTC", description="IANA time zone the expression is read in")
    handler: Name
    queue: Name = "default"
    payload: Any = None
    parameters: JsonObject | None = None
    metadata: JsonObject | None = Field(None, description="copied into every execution the schedule fires")
    priority: Int32 = 0
    enabled: Annotated[bool, Strict()] = True
    execution_mode: ExecutionModeName = "SINGLE_INSTANCE"
    overlap_policy: OverlapName = "SKIP"
    misfire_policy: MisfireName = "FIRE_ONCE"
    max_attempts: Annotated[int, Strict(), Field(ge=1, le=1000)] = 5
    tracked: Annotated[bool, Strict()] = Field(
        True, description="false: SUCCEEDED executions (and their events) are deleted at the schedule's next fire")


class ScheduleOut(BaseModel):
    job_id: str
    cron: str
    timezone: str
    handler: str
    queue: str
    payload: Any
    parameters: Any
    metadata: Any
    priority: int
    enabled: bool
    execution_mode: ExecutionModeName
    overlap_policy: OverlapName
    misfire_policy: MisfireName
    max_attempts: int
    tracked: bool
    next_fire_at: datetime | None
    last_fired_at: datetime | None
    last_success_at: datetime | None
    last_failure_at: datetime | None
    consecutive_failures: int = Field(description="fires ended DEAD_LETTER or ABANDONED since the last success")
    created_at: datetime
    updated_at: datetime


class ScheduleList(BaseModel):
    items: list[ScheduleOut]


class SchedulePreview(BaseModel):
    items: list[datetime] = Field(description="the next fire instants, UTC, time zone and DST resolved")


class FieldProblem(BaseModel):
    field: str = Field(description="path of the offending input, e.g. `jobs[3].payload`")
    message: str


class Problem(BaseModel):
    """RFC 9457 problem details (media type application/problem+json)."""

    type: str
    title: str
    status: int
    detail: str
    errors: list[FieldProblem] | None = Field(None, description="on 422: every field at fault")


_PROBLEM_TEXT = {
    401: "missing or wrong credentials (API key, or callback token on callback routes)",
    403: "a callback token that is bad or belongs to another execution",
    404: "no such resource",
    409: "not allowed in the current state (or a stale attempt's callback)",
    413: "a job's payload + parameters + metadata, or the request body, is over its limit",
    422: "validation failed: `errors` names every field at fault",
    503: "the database is unreachable; retry after `Retry-After` seconds",
}


def problems(*codes: int) -> dict[int | str, dict[str, Any]]:
    """OpenAPI `responses` for these status codes, each a problem+json document."""
    return {
        code: {"model": Problem, "description": _PROBLEM_TEXT[code],
               "content": {"application/problem+json": {"schema": {"$ref": "#/components/schemas/Problem"}}}}
        for code in codes
    }


class Health(BaseModel):
    status: str


Count = Annotated[int, Strict(), Field(ge=0, le=2**62)]


class ProgressIn(StrictModel):
    total: Count | None = None
    succeeded: Count | None = None
    failed: Count | None = None
    status: Annotated[str, Strict(), StringConstraints(max_length=1000)] | None = None


class CancelRequested(BaseModel):
    cancel_requested: bool = Field(description="true once the execution is no longer PROCESSING: stop working on it")


class NodeOut(BaseModel):
    server_id: str
    started_at: datetime
    last_heartbeat: datetime
    in_flight: int


class NodeList(BaseModel):
    items: list[NodeOut]


class QueueOut(BaseModel):
    name: str
    paused: bool
    counts: dict[str, int] = Field(description="executions by state (every state, 0 included)")
    oldest_claimable_age_seconds: float | None = Field(
        description="age of the oldest due ENQUEUED job (database time); null when none is due")


class QueueList(BaseModel):
    items: list[QueueOut]
