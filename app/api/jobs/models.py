"""Request and response models of /v1/jobs."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal
from uuid import UUID

from pydantic import AwareDatetime, Field, Strict, ValidationInfo, field_validator

from app.api.executions.models import ExecutionOut
from app.api.fields import Int32, JsonObject, Name, ResponseModel, Seconds, StrictModel, rfc3339_text, within_utc_years
from app.domain.executions import MAX_DEBOUNCE_SECONDS, Debounce, NewJob


class DebounceIn(StrictModel):
    """While an execution of the handler and `key` waits, a new enqueue goes to it instead of making
    another (POST /v1/jobs only)."""

    key: Name = Field(description="the debounce key, per handler (e.g. `reindex:customer:42`)")
    delay_seconds: Annotated[float, Strict(), Field(gt=0, le=MAX_DEBOUNCE_SECONDS)] = Field(
        description="trailing: the waiting execution is due this long after the latest enqueue; leading: "
                    "enqueues are dropped until this long after the latest one")
    max_delay_seconds: Annotated[float, Strict(), Field(gt=0, le=MAX_DEBOUNCE_SECONDS)] | None = Field(
        None, description="never later than this long after the run's first enqueue (at most, and by default, "
                          "86400)")
    mode: Literal["trailing", "leading"] = Field(
        "trailing", description="trailing: the last enqueue's payload and metadata run once the enqueues stop; "
                                "leading: the first runs at once, the rest within the window are dropped")

    @field_validator("max_delay_seconds")
    @classmethod
    def _not_below_the_delay(cls, value: float | None, info: ValidationInfo) -> float | None:
        delay = info.data.get("delay_seconds")
        if value is not None and delay is not None and value < delay:
            raise ValueError("must be at least delay_seconds")
        return value

    def to_debounce(self) -> Debounce:
        return Debounce(key=self.key, delay_seconds=self.delay_seconds, max_delay_seconds=self.max_delay_seconds,
                        mode=self.mode)


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
    concurrency_key: Name | None = Field(
        None, description="The key this job shares a limit with (e.g. `customer:42`): its handler's key_concurrency "
                          "and key_rate_limit count per key, keys take turns in the claim, and a key can be paused "
                          "alone. Not with a stateful job.")
    debounce: DebounceIn | None = Field(
        None, description="POST /v1/jobs only (not in a batch); not with run_at or delay_seconds: it decides when "
                          "the job runs. An idempotency key stored before answers first.")

    _run_at_is_text = field_validator("run_at", mode="before")(rfc3339_text)

    @field_validator("run_at")
    @classmethod
    def _run_at_in_range(cls, value: datetime | None) -> datetime | None:
        return within_utc_years(value)

    @field_validator("debounce")
    @classmethod
    def _debounce_decides_the_start(cls, value: DebounceIn | None, info: ValidationInfo) -> DebounceIn | None:
        if value is not None and (info.data.get("run_at") is not None or info.data.get("delay_seconds") is not None):
            raise ValueError("decides when the job runs: give run_at, delay_seconds or debounce, not two")
        return value

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
            concurrency_key=self.concurrency_key,
            debounce=self.debounce.to_debounce() if self.debounce else None,
        )


class BatchIn(StrictModel):
    jobs: Annotated[list[JobIn], Field(min_length=1, max_length=1000)]


class BatchItemOut(ExecutionOut):
    created: bool = Field(description="false when the item's idempotency key named an execution already stored "
                                      "with the same request: that execution is returned, nothing was inserted")


class BatchOut(ResponseModel):
    items: list[BatchItemOut]


class BatchIdsOut(ResponseModel):
    """The answer to a batch sent with `Prefer: return=minimal` (RFC 7240)."""
    ids: list[UUID] = Field(description="each item's execution id, in item order (an idempotency key's item: the "
                                        "execution stored before)")
