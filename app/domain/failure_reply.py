"""A failing answer that says what failed: the JSON body `{"error": {"type", "message"},
"retryable"?}` of a handler's reply that is not 2xx (DESIGN §5). Read the same way as the error
of a `complete` callback, so a failure reads alike whether it came in the reply or after a 202."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from app.domain.names import NAME_PATTERN
from app.domain.states import ABANDONED_ERROR_PREFIX

# The complete callback's limit on error.type.
MAX_ERROR_TYPE_CHARS = 100
_NAME = re.compile(NAME_PATTERN)


@dataclass(frozen=True, slots=True)
class ReportedFailure:
    error_type: str | None  # None: the body named a type Jobwire does not record (the reply's own type stands)
    message: str
    retryable: bool


def recordable_error_type(value: str) -> bool:
    """A name (as handlers and queues are named), at most 100 characters, and none of the
    `abandoned_*` types: those say Jobwire abandoned the attempt itself, which a late success may
    still win over, so a handler's failure must never pass for one."""
    return (len(value) <= MAX_ERROR_TYPE_CHARS and _NAME.fullmatch(value) is not None
            and not value.startswith(ABANDONED_ERROR_PREFIX))


def reported_failure(document: Any) -> ReportedFailure | None:
    """The failure a decoded reply body reports, or None when the body is not of that shape (a
    member missing or of another type); members beside these are ignored."""
    if not isinstance(document, dict):
        return None
    error = document.get("error")
    retryable = document.get("retryable", True)
    if not isinstance(error, dict) or not isinstance(retryable, bool):
        return None
    error_type, message = error.get("type"), error.get("message")
    if not isinstance(error_type, str) or not isinstance(message, str):
        return None
    return ReportedFailure(error_type if recordable_error_type(error_type) else None, message, retryable)
