"""Request and response models of /v1/schedules."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import Field, Strict, StringConstraints

from app.api.fields import Int32, JsonObject, Name, ResponseModel, StrictModel

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


class ScheduleOut(ResponseModel):
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


class ScheduleList(ResponseModel):
    items: list[ScheduleOut]


class SchedulePreview(ResponseModel):
    items: list[datetime] = Field(description="the next fire instants, UTC, time zone and DST resolved")
