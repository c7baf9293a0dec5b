"""orjson responses and the RFC 9457 problem document."""

from __future__ import annotations

from typing import Any

import orjson
from starlette.responses import JSONResponse, Response

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
