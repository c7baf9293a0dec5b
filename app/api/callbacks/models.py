"""Request and response models of the callback routes."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal
from uuid import UUID

from pydantic import AwareDatetime, Field, Strict, StringConstraints, field_validator

from app.api.fields import ResponseModel, StrictModel, rfc3339_text, within_utc_years
from app.api.workflows.models import Jobs, WorkflowItemOut
from app.domain.logs import MAX_ENTRIES_PER_CALL
from app.domain.names import NAME_PATTERN
from app.domain.states import ABANDONED_ERROR_PREFIX
from app.domain.failure_reply import MAX_ERROR_TYPE_CHARS


class CompletionError(StrictModel):
    message: Annotated[str, Strict()] = ""
    type: Annotated[str, Strict(), StringConstraints(max_length=MAX_ERROR_TYPE_CHARS)] | None = Field(
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


class SuspendIn(StrictModel):
    """Wait, holding no slot, until a time, a named signal, the end of every child it spawned, or a
    timeout; then the execution is dispatched again (the same attempt) with `resume` and `steps`."""

    until: AwareDatetime | None = Field(None, description="RFC 3339 with a zone, at most 365 days ahead")
    seconds: Annotated[float, Strict(), Field(ge=0, le=365 * 86400)] | None = Field(
        None, description="instead of until: this long from now")
    signals: Annotated[list[Annotated[str, StringConstraints(pattern=NAME_PATTERN)]], Field(max_length=100)] | None = (
        Field(None, description="resume when a signal of one of these names arrives (or is there already)"))
    children: Literal["all"] | None = Field(
        None, description="resume (reason `children`) once every child this execution spawned (POST "
                          "…/children) is terminal; `resume.children` has them by ref")
    timeout_seconds: Annotated[float, Strict(), Field(ge=0, le=365 * 86400)] | None = Field(
        None, description="resume (reason `timeout`) when nothing else came within this long")
    steps: dict[str, Any] | None = Field(None, description="run-step-once results to record, by step name")

    _until_is_text = field_validator("until", mode="before")(rfc3339_text)


class CompleteIn(StrictModel):
    outcome: Literal["succeeded", "failed", "suspended"]
    result: Any = None
    error: CompletionError | None = None
    retryable: Annotated[bool, Strict()] = True
    suspend: SuspendIn | None = Field(None, description="with `outcome: suspended`: what to wait for")


Count = Annotated[int, Strict(), Field(ge=0, le=2**62)]


class ProgressIn(StrictModel):
    total: Count | None = None
    succeeded: Count | None = None
    failed: Count | None = None
    status: Annotated[str, Strict(), StringConstraints(max_length=1000)] | None = None


class CancelRequested(ResponseModel):
    cancel_requested: bool = Field(description="true once the execution is no longer PROCESSING: stop working on it")


class LogEntryIn(StrictModel):
    level: Literal["INFO", "WARN", "ERROR"]
    message: Annotated[str, Strict()] | None = Field(
        description="stored as sent, except: null → `<null>`; C0 control characters other than \\n \\r \\t "
                    "removed; then over 8192 code points → the first 8192 + `…[truncated N chars]`")
    logged_at: AwareDatetime | None = Field(None, description="RFC 3339 with a zone; default: when Jobwire stores it")

    _logged_at_is_text = field_validator("logged_at", mode="before")(rfc3339_text)
    _logged_at_in_range = field_validator("logged_at")(within_utc_years)


class LogsIn(StrictModel):
    entries: Annotated[list[LogEntryIn], Field(max_length=MAX_ENTRIES_PER_CALL,
                                               description=f"at most {MAX_ENTRIES_PER_CALL} per call")]


class LogsStored(ResponseModel):
    stored: int = Field(description="entries stored by this call")


class StepIn(StrictModel):
    result: Any = None


class ParentOut(ResponseModel):
    ref: str
    execution_id: UUID
    state: str
    result: Any


class ParentPage(ResponseModel):
    items: list[ParentOut] = Field(description="the execution's workflow parents by ref, with their results")
    next_after: str | None = Field(description="pass as `after` for the next page; null at the end")


class ChildrenIn(StrictModel):
    jobs: Jobs


class Spawned(ResponseModel):
    workflow_id: UUID = Field(description="the parent's workflow, which the children joined (made for a parent "
                                          "outside workflows, named after its handler)")
    items: list[WorkflowItemOut] = Field(description="the request's children in its order, by the refs it gave")


class ChildOut(ResponseModel):
    ref: str = Field(description="the ref the parent gave it")
    execution_id: UUID
    state: str
    result: Any


class ChildPage(ResponseModel):
    items: list[ChildOut] = Field(description="the children the execution spawned, by ref, with their results")
    next_after: str | None = Field(description="pass as `after` for the next page; null at the end")


class StepOut(ResponseModel):
    name: str
    result: Any
    completed_at: datetime
