"""orjson responses and the RFC 9457 problem document, with the model that documents it."""

from __future__ import annotations

from typing import Any

import orjson
from pydantic import BaseModel, Field
from starlette.responses import JSONResponse, Response

from app.api.examples import VALIDATION_EXAMPLE
from app.domain.jsontext import dumps


class FastJSON(JSONResponse):
    # Stored JSON comes with integers past 64 bits as orjson fragments, written as their digits;
    # dumps also writes a Python int past 64 bits (orjson alone refuses it).
    def render(self, content: Any) -> bytes:
        return dumps(content, option=orjson.OPT_UTC_Z)


PROBLEM_TYPES = {
    400: "bad-request", 401: "unauthorized", 403: "forbidden", 404: "not-found",
    405: "method-not-allowed", 409: "conflict", 413: "payload-too-large",
    415: "unsupported-media-type", 422: "validation-error", 503: "unavailable",
}
TITLES = {
    400: "Bad request", 401: "Unauthorized", 403: "Forbidden", 404: "Not found",
    405: "Method not allowed", 409: "Conflict", 413: "Payload too large",
    415: "Unsupported media type", 422: "Validation failed", 503: "Service unavailable",
}


def problem(status: int, detail: str, *, errors: list[dict[str, str]] | None = None,
            headers: dict[str, str] | None = None, title: str | None = None) -> Response:
    body: dict[str, Any] = {
        "type": f"https://jobwire.dev/problems/{PROBLEM_TYPES.get(status, 'error')}",
        "title": title or TITLES.get(status, "Error"),
        "status": status,
        "detail": detail,
    }
    if errors is not None:
        body["errors"] = errors
    return Response(orjson.dumps(body), status_code=status, headers=headers,
                    media_type="application/problem+json")


class FieldProblem(BaseModel):
    field: str = Field(description="path of the offending input, e.g. `jobs[3].payload`")
    message: str


class Problem(BaseModel):
    """RFC 9457 problem details (media type application/problem+json)."""

    type: str = Field(description="a URI naming the kind of problem: `https://jobwire.dev/problems/<kind>`")
    title: str
    status: int = Field(description="the HTTP status code")
    detail: str = Field(description="what went wrong with this request")
    errors: list[FieldProblem] = Field(default_factory=list, description="on a 422 (and a 413 naming the job) "
                                       "only: every field at fault")


_PROBLEM_TEXT = {
    401: "missing or wrong credentials (API key, or callback token on callback routes)",
    403: "a callback token that is bad or belongs to another execution",
    404: "no such resource",
    409: "not allowed in the current state (or a stale attempt's callback)",
    413: "a job's payload + parameters + metadata, or the request body, is over its limit",
    422: "validation failed: `errors` names every field at fault",
    503: "the database is unreachable; retry after `Retry-After` seconds",
}
# The headers a problem of that status carries (app/api/errors.py).
_PROBLEM_HEADERS = {
    401: {"WWW-Authenticate": {"description": "`Bearer`", "schema": {"type": "string"}}},
    503: {"Retry-After": {"description": "seconds to wait before sending the request again",
                          "schema": {"type": "integer"}}},
}


def problem_response(description: str, *, headers: dict[str, Any] | None = None,
                     example: dict[str, Any] | None = None) -> dict[str, Any]:
    """One OpenAPI response: a problem+json document, under that media type only (no `model`,
    which would declare it as application/json too; app/api/app.py adds Problem to the components)."""
    media: dict[str, Any] = {"schema": {"$ref": "#/components/schemas/Problem"}}
    if example is not None:
        media["example"] = example
    return {"description": description, "content": {"application/problem+json": media},
            **({"headers": headers} if headers else {})}


def problems(*codes: int) -> dict[int | str, dict[str, Any]]:
    """OpenAPI `responses` for these status codes, each a problem+json document."""
    return {code: problem_response(_PROBLEM_TEXT[code], headers=_PROBLEM_HEADERS.get(code),
                                   example=VALIDATION_EXAMPLE if code == 422 else None)
            for code in codes}
