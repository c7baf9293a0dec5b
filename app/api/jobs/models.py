"""Request and response models of /v1/jobs."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from pydantic import AwareDatetime, Field, Strict, ValidationInfo, field_validator

from app.api.executions.models import ExecutionOut
from app.api.fields import Int32, JsonObject, Name, ResponseModel, Seconds, StrictModel, rfc3339_text, within_utc_years
from app.domain.executions import NewJob


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

    _run_at_is_text = field_validator("run_at", mode="before")(rfc3339_text)

    @field_validator("run_at")
    @classmethod
    def _run_at_in_range(cls, value: datetime | None) -> datetime | None:
        return within_utc_years(value)

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
        )


class BatchIn(StrictModel):
    jobs: Annotated[list[JobIn], Field(min_length=1, max_length=1000)]


class BatchItemOut(ExecutionOut):
    created: bool = Field(description="false when the item's idempotency key named an execution already stored "
                                      "with the same request: that execution is returned, nothing was inserted")


class BatchOut(ResponseModel):
    items: list[BatchItemOut]
