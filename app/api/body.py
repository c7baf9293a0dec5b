"""Request bodies: a size cap enforced as the body streams in, and strict JSON parsing."""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Any

import orjson
from fastapi.exceptions import RequestValidationError
from fastapi.routing import APIRoute
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app.api.responses import problem
from app.domain.jsonsafety import UnstorableJson, check_storable


class BodyTooLarge(Exception):
    pass


class BodyLimitMiddleware:
    """413 once a request body passes `limit` bytes, counted as it streams (chunked or not)."""

    def __init__(self, app: ASGIApp, limit: int) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        for name, value in scope.get("headers", ()):
            if name == b"content-length" and value.isdigit() and int(value) > self.limit:
                await self._refuse(scope, receive, send)
                return
        seen = 0
        response_started = False

        async def counting_receive() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.limit:
                    raise BodyTooLarge
            return message

        async def tracking_send(message: Message) -> None:
            nonlocal response_started
            if message["type"] == "http.response.start":
                response_started = True
            await send(message)

        try:
            await self.app(scope, counting_receive, tracking_send)
        except BodyTooLarge:
            if not response_started:
                await self._refuse(scope, receive, send)

    async def _refuse(self, scope: Scope, receive: Receive, send: Send) -> None:
        response = problem(413, f"request body over the limit of {self.limit} bytes",
                           headers={"connection": "close"})
        await response(scope, receive, send)


class StrictJSONRoute(APIRoute):
    """Parses JSON bodies with orjson and refuses what PostgreSQL cannot store, before
    FastAPI validates them: NaN, Infinity, 1e400, lone surrogates, \\u0000, nesting > 64."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def strict_handler(request: Request) -> Response:
            body = await request.body()
            if body:
                try:
                    document = orjson.loads(body)
                except orjson.JSONDecodeError as exc:
                    raise RequestValidationError(
                        [{"type": "json_invalid", "loc": ("body",), "msg": f"malformed JSON: {exc}", "input": None}]
                    ) from exc
                try:
                    check_storable(document)
                except UnstorableJson as exc:
                    raise RequestValidationError(
                        [{"type": "json_unstorable", "loc": ("body", *_path_parts(exc.path)), "msg": exc.message,
                          "input": None}]
                    ) from exc
                request._json = document  # FastAPI's request.json() returns this
            return await handler(request)

        return strict_handler


def _path_parts(path: str) -> tuple[str | int, ...]:
    parts: list[str | int] = []
    for dotted in path.split(".") if path else []:
        name, _, rest = dotted.partition("[")
        if name:
            parts.append(name)
        for index in filter(None, rest.replace("]", "").split("[")) if rest else []:
            parts.append(int(index) if index.isdigit() else index)
    return tuple(parts)
