"""What a finished `handle` becomes: the synchronous reply, or the completion callback's body.
One reading of the task for both, so the two paths cannot disagree."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import Any

from jobwire.handler._callbacks import encode
from jobwire.handler._errors import Permanent

log = logging.getLogger("jobwire.handler")

MAX_ERROR_TYPE = 100


@dataclass(frozen=True, slots=True)
class Outcome:
    succeeded: bool
    result_json: bytes = b"null"  # the result, already encoded: a result that is not JSON is a failure
    message: str = ""
    error_type: str = ""
    retryable: bool = True


def outcome_of(work: asyncio.Task[Any], execution_id: str) -> Outcome:
    if work.cancelled():
        return Outcome(False, message="the handler was stopped before it finished (shutting down)",
                       error_type="HandlerStopped")
    exc = work.exception()
    if exc is None:
        try:
            return Outcome(True, result_json=encode(work.result()))
        except (TypeError, ValueError) as encoding:
            return Outcome(False, message=f"the result is not JSON: {encoding}", error_type="UnencodableResult")
    if isinstance(exc, Permanent):
        log.warning("execution %s failed permanently: %s", execution_id, exc)
        return Outcome(False, message=str(exc) or "Permanent", retryable=False,
                       error_type=(exc.error_type or type(exc).__name__)[:MAX_ERROR_TYPE])
    log.error("execution %s failed", execution_id, exc_info=exc)
    return Outcome(False, message=f"{type(exc).__name__}: {exc}".removesuffix(": "),
                   error_type=type(exc).__name__[:MAX_ERROR_TYPE])


def sync_reply(outcome: Outcome) -> tuple[int, bytes]:
    """(status, JSON body): 200 {"result": …} succeeds the attempt, a 500 problem fails it (and
    Jobwire stores the body in last_error). Never used for a non-retryable failure: only the
    completion callback can say `retryable: false`."""
    if outcome.succeeded:
        return 200, b'{"result":' + outcome.result_json + b"}"
    return 500, problem(500, "Handler failed", outcome.message)


def completion_body(outcome: Outcome) -> bytes:
    if outcome.succeeded:
        return b'{"outcome":"succeeded","result":' + outcome.result_json + b"}"
    return encode({"outcome": "failed", "error": {"message": outcome.message, "type": outcome.error_type},
                   "retryable": outcome.retryable})


def problem(status: int, title: str, detail: str) -> bytes:
    """RFC 9457 problem+json, Jobwire's own error format."""
    return encode({"type": "about:blank", "title": title, "status": status, "detail": detail})
