"""Response models of executions (DESIGN §4: "an execution is shown as …") and their logs."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import Field

from app.api.fields import ResponseModel

StateName = Literal["ENQUEUED", "PROCESSING", "SUCCEEDED", "FAILED", "CANCELLED", "ABANDONED", "DEAD_LETTER"]


class ProgressOut(ResponseModel):
    total: int
    succeeded: int
    failed: int
    status: str | None
    percentage: int


class ExecutionOut(ResponseModel):
    id: str
    job_id: str
    job_type: Literal["DELAYED", "CRON", "BATCH"]
    handler: str
    queue: str
    state: StateName
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


class ExecutionPage(ResponseModel):
    items: list[ExecutionOut]
    next_cursor: str | None


class LogOut(ResponseModel):
    attempt: int = Field(description="the attempt whose handler wrote it")
    level: Literal["INFO", "WARN", "ERROR"]
    message: str
    logged_at: datetime


class LogPage(ResponseModel):
    items: list[LogOut]
    next_cursor: str | None
