"""Every error as RFC 9457 problem+json; FastAPI's own 404/405/422 bodies replaced."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from fastapi import FastAPI
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.requests import Request
from starlette.responses import Response

from app.api.responses import problem
from app.domain.errors import (
    Conflict,
    DatabaseContention,
    DatabaseUnavailable,
    Forbidden,
    InvalidTransition,
    NotFound,
    PayloadTooLarge,
    StaleAttempt,
    Unauthenticated,
    ValidationFailed,
)

log = logging.getLogger(__name__)
_LOCATIONS = {"body", "query", "path", "header", "cookie"}


def field_path(loc: Sequence[Any]) -> str:
    """('body', 'jobs', 3, 'payload') → 'jobs[3].payload'; ('query', 'limit') → 'limit'."""
    parts = list(loc)
    if parts and parts[0] in _LOCATIONS:
        parts = parts[1:]
    out = ""
    for part in parts:
        if isinstance(part, int):
            out += f"[{part}]"
        elif str(part).startswith(("function-", "model-", "json-or-python")) or part in ("tagged-union",):
            continue
        else:
            out += ("." if out else "") + str(part)
    return out or "body"


def _validation_errors(exc: RequestValidationError) -> list[dict[str, str]]:
    errors = []
    for err in exc.errors():
        message = str(err.get("msg", "invalid"))
        if err.get("type") == "extra_forbidden":
            message = "unknown field"
        elif err.get("type") == "missing":
            message = "field required"
        errors.append({"field": field_path(err.get("loc", ())), "message": message.removeprefix("Value error, ")})
    return errors


# Domain errors that map to a status and their own message.
_STATUSES: dict[type[Exception], int] = {
    NotFound: 404, InvalidTransition: 409, StaleAttempt: 409, Conflict: 409, Forbidden: 403,
}


def problem_for(exc: Exception, request: Request | None = None) -> Response:
    """The problem document answering an exception a route or a service raised. Anything not
    named here is a bug: logged, and answered 500 (a connection-level failure: 503)."""
    if isinstance(exc, RequestValidationError):
        errors = _validation_errors(exc)
        return problem(422, "; ".join(f"{e['field']}: {e['message']}" for e in errors[:5]), errors=errors)
    if isinstance(exc, ValidationFailed):
        return problem(422, str(exc), errors=[{"field": e.field, "message": e.message} for e in exc.errors])
    if isinstance(exc, PayloadTooLarge):
        return problem(413, str(exc), errors=[{"field": exc.field, "message": str(exc).split(": ", 1)[1]}])
    for error, status in _STATUSES.items():
        if isinstance(exc, error):
            return problem(status, str(exc))
    if isinstance(exc, Unauthenticated):
        return problem(401, str(exc), headers={"www-authenticate": "Bearer"})
    # Connection-level failures that escaped a transaction are an outage, not a bug.
    if isinstance(exc, (DatabaseUnavailable, OSError, ConnectionError)):
        return problem(503, "the database is unreachable; retry shortly", headers={"retry-after": "5"})
    if isinstance(exc, DatabaseContention):
        return problem(503, "concurrent requests for the same rows kept colliding (serialization failure or "
                            "deadlock) and this one was tried several times; send it again",
                       headers={"retry-after": "1"})
    if isinstance(exc, StarletteHTTPException):
        detail = exc.detail if isinstance(exc.detail, str) else "request refused"
        return problem(exc.status_code, detail, headers=getattr(exc, "headers", None))
    where = f" on {request.method} {request.url.path}" if request is not None else ""
    log.error("unhandled error%s", where, exc_info=exc)
    return problem(500, "internal error", title="Internal server error")


async def _handle(request: Request, exc: Exception) -> Response:
    return problem_for(exc, request)


def install(app: FastAPI) -> None:
    for error in (RequestValidationError, ValidationFailed, PayloadTooLarge, *_STATUSES, Unauthenticated,
                  DatabaseUnavailable, DatabaseContention, StarletteHTTPException, Exception):
        app.add_exception_handler(error, _handle)
