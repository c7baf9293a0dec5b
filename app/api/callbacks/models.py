"""Request and response models of the callback routes."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import AwareDatetime, Field, Strict, StringConstraints, field_validator

from app.api.fields import ResponseModel, StrictModel, rfc3339_text, within_utc_years
from app.domain.logs import MAX_ENTRIES_PER_CALL
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


class CompleteIn(StrictModel):
    outcome: Literal["succeeded", "failed"]
    result: Any = None
    error: CompletionError | None = None
    retryable: Annotated[bool, Strict()] = True


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


class StepOut(ResponseModel):
    name: str
    result: Any
    completed_at: datetime
