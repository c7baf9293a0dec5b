"""What a finished `handle` becomes: the synchronous reply, or the completion callback's body.
One reading of the task for both, so the two paths cannot disagree: a failure carries the same
`error: {type, message}` and `retryable` in the reply's body as in the completion, and a
suspension the same `suspend` object, and Jobwire records both alike."""

from __future__ import annotations

import asyncio
import logging
import re
from dataclasses import dataclass
from typing import Any

from jobwire.handler._callbacks import STALE, encode
from jobwire.handler._errors import CallbackError, Permanent, Suspend

log = logging.getLogger("jobwire.handler")

# What Jobwire records as an error_type (longer, another shape, or one of its own abandoned_*
# types, and the reply's type stands instead): the toolkit sends only such a type, so the
# reply and the completion callback record the same one.
MAX_ERROR_TYPE = 100
ERROR_TYPE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]*")
RESERVED_PREFIX = "abandoned_"
FALLBACK_TYPE = "handler_failed"  # Jobwire's own name for a failure a handler reports
# Far under Jobwire's cap on a reply's body, which a longer failing answer would exceed (Jobwire
# stores the first 2,000 characters of a message).
MAX_MESSAGE = 65_536


@dataclass(frozen=True, slots=True)
class Outcome:
    succeeded: bool
    result_json: bytes = b"null"  # the result, already encoded: a result that is not JSON is a failure
    message: str = ""
    error_type: str = ""
    retryable: bool = True
    suspend_json: bytes | None = None  # a suspension (`Suspend`): its `suspend` object, encoded


def error_type_of(name: str) -> str:
    """`name` (cut to 100 characters) when Jobwire records it as given, else handler_failed."""
    name = name[:MAX_ERROR_TYPE]
    if ERROR_TYPE.fullmatch(name) and not name.startswith(RESERVED_PREFIX):
        return name
    return FALLBACK_TYPE


def failure(exc: BaseException, *, retryable: bool = True, error_type: str | None = None) -> Outcome:
    """The exception's class name as the type (not its qualified name: `<locals>` and module paths
    are no names, and a type stays the same when the code moves), str(exc) as the message."""
    message = str(exc) or type(exc).__name__
    if len(message) > MAX_MESSAGE:
        message = f"{message[:MAX_MESSAGE]}…[truncated {len(message) - MAX_MESSAGE} chars]"
    return Outcome(False, message=message, error_type=error_type_of(error_type or type(exc).__name__),
                   retryable=retryable)


def outcome_of(work: asyncio.Task[Any], execution_id: str) -> Outcome:
    if work.cancelled():
        return Outcome(False, message="the handler was stopped before it finished (shutting down)",
                       error_type="HandlerStopped")
    exc = work.exception()
    if isinstance(exc, Suspend):
        try:
            suspension = encode(exc.document)
        except (TypeError, ValueError) as encoding:
            return Outcome(False, message=f"the suspension's steps are not JSON: {encoding}",
                           error_type="UnencodableResult")
        log.info("execution %s %s", execution_id, exc)
        return Outcome(False, suspend_json=suspension)
    if exc is None:
        try:
            return Outcome(True, result_json=encode(work.result()))
        except (TypeError, ValueError) as encoding:
            return Outcome(False, message=f"the result is not JSON: {encoding}", error_type="UnencodableResult")
    if isinstance(exc, Permanent):
        log.warning("execution %s failed permanently: %s", execution_id, exc)
        return failure(exc, retryable=False, error_type=exc.error_type)
    if isinstance(exc, CallbackError) and exc.status == STALE:
        log.info("execution %s: stopped: the attempt is no longer current (%s)", execution_id, exc)
    else:
        log.error("execution %s failed", execution_id, exc_info=exc)
    return failure(exc)


def sync_reply(outcome: Outcome) -> tuple[int, bytes]:
    """(status, JSON body): 200 {"result": …} succeeds the attempt, 200 {"suspend": …} makes it
    wait; a failure is a 500 problem (RFC 9457) carrying `error` and `retryable`, which Jobwire
    records as the attempt's error."""
    if outcome.suspend_json is not None:
        return 200, b'{"suspend":' + outcome.suspend_json + b"}"
    if outcome.succeeded:
        return 200, b'{"result":' + outcome.result_json + b"}"
    return 500, encode({"type": "about:blank", "title": "Handler failed", "status": 500, "detail": outcome.message,
                        "error": {"type": outcome.error_type, "message": outcome.message},
                        "retryable": outcome.retryable})


def completion_body(outcome: Outcome) -> bytes:
    if outcome.suspend_json is not None:
        return b'{"outcome":"suspended","suspend":' + outcome.suspend_json + b"}"
    if outcome.succeeded:
        return b'{"outcome":"succeeded","result":' + outcome.result_json + b"}"
    return encode({"outcome": "failed", "error": {"message": outcome.message, "type": outcome.error_type},
                   "retryable": outcome.retryable})


def problem(status: int, title: str, detail: str) -> bytes:
    """RFC 9457 problem+json, Jobwire's own error format."""
    return encode({"type": "about:blank", "title": title, "status": status, "detail": detail})
