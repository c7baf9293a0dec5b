"""Every error as RFC 9457 problem+json; FastAPI's own 404/405/422 bodies replaced."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from fastapi import FastAPI
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.requests import Request
from starlette.responses import Response

from app.api.responses import problem
from app.domain.errors import (
    Conflict,
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


def _plain_problem(status: int) -> Callable[[Request, Exception], Awaitable[Response]]:
    async def handle(_: Request, exc: Exception) -> Response:
        return problem(status, str(exc))
    return handle


def install(app: FastAPI) -> None:
    @app.exception_handler(RequestValidationError)
    async def _validation(_: Request, exc: RequestValidationError) -> Response:
        errors = _validation_errors(exc)
        return problem(422, "; ".join(f"{e['field']}: {e['message']}" for e in errors[:5]), errors=errors)

    @app.exception_handler(ValidationFailed)
    async def _failed(_: Request, exc: ValidationFailed) -> Response:
        errors = [{"field": e.field, "message": e.message} for e in exc.errors]
        return problem(422, str(exc), errors=errors)

    @app.exception_handler(PayloadTooLarge)
    async def _too_large(_: Request, exc: PayloadTooLarge) -> Response:
        return problem(413, str(exc), errors=[{"field": exc.field, "message": str(exc).split(": ", 1)[1]}])

    # Domain errors that map to a status and their own message.
    statuses: dict[type[Exception], int] = {
        NotFound: 404, InvalidTransition: 409, StaleAttempt: 409, Conflict: 409, Forbidden: 403,
    }
    for error, status in statuses.items():
        app.add_exception_handler(error, _plain_problem(status))

    @app.exception_handler(Unauthenticated)
    async def _unauthenticated(_: Request, exc: Unauthenticated) -> Response:
        return problem(401, str(exc), headers={"www-authenticate": "Bearer"})

    @app.exception_handler(DatabaseUnavailable)
    async def _unavailable(_: Request, exc: DatabaseUnavailable) -> Response:
        return problem(503, "the database is unreachable; retry shortly", headers={"retry-after": "5"})

    @app.exception_handler(StarletteHTTPException)
    async def _http(_: Request, exc: StarletteHTTPException) -> Response:
        detail = exc.detail if isinstance(exc.detail, str) else "request refused"
        return problem(exc.status_code, detail, headers=getattr(exc, "headers", None))

    @app.exception_handler(Exception)
    async def _unexpected(request: Request, exc: Exception) -> Response:
        # Connection-level failures that escaped a transaction are an outage, not a bug.
        if isinstance(exc, (OSError, ConnectionError)):
            return problem(503, "the database is unreachable; retry shortly", headers={"retry-after": "5"})
        log.exception("unhandled error on %s %s", request.method, request.url.path)
        return problem(500, "internal error", title="Internal server error")
