"""Request bodies: a size cap enforced as the body streams in, strict JSON parsing, and the
route class that checks a request before FastAPI sees it (a gate such as the API key check of
app/api/auth.py, unknown query parameters and the body's content type on strict routes)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, TypeVar
from uuid import UUID

import orjson
from fastapi.dependencies.models import Dependant
from fastapi.exceptions import RequestValidationError
from fastapi.routing import APIRoute
from pydantic import BaseModel, ValidationError
from starlette.datastructures import MutableHeaders
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app.api.responses import problem
from app.domain.errors import ValidationFailed
from app.domain.jsonsafety import UnstorableJson, check_storable
from app.domain.jsontext import loads


# Refusing a body, read and discard up to this much more of it (briefly) before answering.
# Closing a connection with unread input makes the kernel send RST, which destroys the 413
# before a client that writes its whole body first (httpx, requests) can read it.
DRAIN_BYTES = 1 << 20
DRAIN_SECONDS = 2.0
# A 422 names at most this many fields (a batch of 1,000 bad items: the first 100 of them).
MAX_NAMED_ERRORS = 100
JSON_MEDIA_TYPES = "application/json (or application/<something>+json)"


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
        headers = dict(scope.get("headers", ()))
        declared = headers.get(b"content-length", b"")
        if declared.isdigit() and int(declared) > self.limit:
            # A client waiting for `100 Continue` has sent nothing yet: answer without reading.
            waiting = headers.get(b"expect", b"").lower() == b"100-continue"
            drain = not waiting and int(declared) <= self.limit + DRAIN_BYTES
            await self._refuse(scope, receive, send, drain=drain)
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
                await self._refuse(scope, receive, send, drain=True)

    async def _refuse(self, scope: Scope, receive: Receive, send: Send, *, drain: bool) -> None:
        if drain:
            await _discard_body(receive, DRAIN_BYTES)
        response = problem(413, f"request body over the limit of {self.limit} bytes",
                           headers={"connection": "close"})
        await response(scope, receive, send)


async def _discard_body(receive: Receive, budget: int) -> None:
    """Reads what remains of the request body, up to `budget` bytes and DRAIN_SECONDS."""
    try:
        async with asyncio.timeout(DRAIN_SECONDS):
            while budget > 0:
                message = await receive()
                if message["type"] != "http.request":
                    return
                budget -= len(message.get("body", b""))
                if not message.get("more_body", False):
                    return
    except TimeoutError:
        return


def is_json(content_type: str | bytes | None) -> bool:
    """`application/json` or `application/<anything>+json`, as FastAPI takes a JSON body."""
    if not content_type:
        return False
    text = content_type.decode("latin-1") if isinstance(content_type, bytes) else content_type
    media = text.partition(";")[0].strip().lower()
    return media == "application/json" or (media.startswith("application/") and media.endswith("+json"))


def parse_json(body: bytes, *, nul_in_strings: bool = False) -> Any:
    """A request body as JSON that PostgreSQL can store, or RequestValidationError naming where not."""
    try:
        document = loads(body)
    except orjson.JSONDecodeError as exc:
        raise RequestValidationError(
            [{"type": "json_invalid", "loc": ("body",), "msg": f"malformed JSON: {exc}", "input": None}]
        ) from exc
    faults = unstorable(document, nul_in_strings=nul_in_strings)
    if faults:
        raise RequestValidationError(
            [{"type": "json_unstorable", "loc": ("body", *_path_parts(f.path)), "msg": f.message, "input": None}
             for f in faults])
    return document


def unstorable(document: Any, *, nul_in_strings: bool = False) -> list[UnstorableJson]:
    """What PostgreSQL cannot store in `document`: nothing, or the first fault of each top-level
    member and of each item of a top-level list (a batch's `jobs[i]`), up to MAX_NAMED_ERRORS."""
    try:
        check_storable(document, nul_in_strings=nul_in_strings)
        return []
    except UnstorableJson as exc:
        first = exc
    if not isinstance(document, dict) or any("\x00" in key for key in document):
        return [first]
    faults: list[UnstorableJson] = []
    # Each part is checked at the depth it has in the document (wrapped in as many lists), its
    # paths then renamed: `[0]` → `name`, `[0][0]` → `name[i]`.
    for name, value in document.items():
        parts = ([([[item]], "[0][0]", f"{name}[{i}]") for i, item in enumerate(value)] if isinstance(value, list)
                 else [([value], "[0]", name)])
        for wrapped, inner, outer in parts:
            try:
                check_storable(wrapped, nul_in_strings=nul_in_strings)
            except UnstorableJson as exc:
                faults.append(UnstorableJson(outer + exc.path.removeprefix(inner), exc.message))
                if len(faults) >= MAX_NAMED_ERRORS:
                    return faults
    return faults or [first]


M = TypeVar("M", bound=BaseModel)


def body_as(request: Request, model: type[M]) -> M:
    """The parsed body (a StrictJSONRoute parsed it) validated as `model`, as FastAPI validates a
    body parameter: its errors located under `body`. For a direct route (app/api/direct.py)."""
    if not hasattr(request, "_json"):
        raise RequestValidationError([{"type": "missing", "loc": ("body",), "msg": "a JSON body is required",
                                       "input": None}])
    document = request._json
    try:
        return model.model_validate(document)
    except ValidationError as exc:
        raise RequestValidationError(
            [{**e, "loc": ("body", *e["loc"])} for e in exc.errors(include_url=False, include_context=False)]
        ) from None


def path_uuid(request: Request, name: str) -> UUID:
    """A path parameter as a UUID, or RequestValidationError naming it (as FastAPI words it)."""
    text = request.path_params[name]
    try:
        return UUID(text)
    except ValueError:
        raise RequestValidationError([{"type": "uuid_parsing", "loc": ("path", name), "input": text,
                                       "msg": "Input should be a valid UUID"}]) from None


class StrictJSONRoute(APIRoute):
    """Parses JSON bodies (orjson, integers past 64 bits kept exactly: app/domain/jsontext.py) and
    refuses what PostgreSQL cannot store, before FastAPI validates them: NaN, Infinity, 1e400,
    lone surrogates, \\u0000, nesting > 64."""

    # A route that removes NUL characters from the strings it stores (log messages) takes them.
    nul_in_strings = False
    # Management routes refuse query parameters they do not declare (422 naming each) and a body
    # whose content type is not JSON (415). Other routes (callbacks) read a body as JSON whatever
    # its content type says, or none: handlers' HTTP clients differ.
    strict_input = False

    def gate(self) -> Callable[[Request], Awaitable[object]] | None:
        """A check run before anything else, the body unread (None: none). The body is parsed
        here, before FastAPI solves the route's parameters: a management route's gate checks the
        API key and its scope first (app/api/auth.py), so a caller without one gets 401 (403
        without the scope) whatever it sent, and costs no parsing."""
        return None

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        return self._strict(super().get_route_handler())

    def direct_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        """The same checks and parsing around the endpoint itself, without FastAPI's parameter
        solving: for a direct route, whose endpoint takes the request alone."""
        return self._strict(self.endpoint)

    def _strict(self, handler: Callable[[Request], Coroutine[Any, Any, Response]]
                ) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        gate = self.gate()
        nul_in_strings = self.nul_in_strings
        strict_input = self.strict_input
        declared = declared_query_parameters(self.dependant)

        async def strict_handler(request: Request) -> Response:
            if gate is not None:
                await gate(request)
            if strict_input and request.scope.get("query_string"):
                unknown = [name for name in request.query_params if name not in declared]
                if unknown:
                    raise RequestValidationError(
                        [{"type": "query_unknown", "loc": ("query", name), "msg": "unknown query parameter",
                          "input": None} for name in unknown[:MAX_NAMED_ERRORS]])
            body = await request.body()
            if body:
                content_type = request.headers.get("content-type")
                if not is_json(content_type):
                    if strict_input:
                        raise HTTPException(415, _not_json(content_type), headers={"accept": "application/json"})
                    _present_as_json(request)
                request._json = parse_json(body, nul_in_strings=nul_in_strings)  # FastAPI's request.json()
            try:
                return await handler(request)
            except RequestValidationError as exc:
                if len(exc.errors()) > MAX_NAMED_ERRORS:
                    raise RequestValidationError(exc.errors()[:MAX_NAMED_ERRORS], body=exc.body) from None
                raise
            except ValidationFailed as exc:
                if len(exc.errors) > MAX_NAMED_ERRORS:
                    raise ValidationFailed(exc.errors[:MAX_NAMED_ERRORS]) from None
                raise

        return strict_handler


def declared_query_parameters(dependant: Dependant) -> frozenset[str]:
    """The query parameters a route declares, its dependencies' included (and the fields of a
    pydantic model taken as query parameters)."""
    names: set[str] = set()
    pending = [dependant]
    while pending:
        current = pending.pop()
        for field in current.query_params:
            names.add(field.alias)
            model = getattr(field.field_info, "annotation", None)
            if isinstance(model, type) and issubclass(model, BaseModel):
                names.update(f.alias or name for name, f in model.model_fields.items())
        pending.extend(current.dependencies)
    return frozenset(names)


def _not_json(content_type: str | None) -> str:
    sent = f"it came as {content_type!r}" if content_type else "it came without a content-type header"
    return f"the request body must be JSON, sent with content-type: {JSON_MEDIA_TYPES}; {sent}"


def _present_as_json(request: Request) -> None:
    """FastAPI reads a body parameter as JSON only under a JSON content type: this request's
    headers (not the connection's) say application/json from here on."""
    headers = MutableHeaders(raw=list(request.headers.raw))
    headers["content-type"] = "application/json"
    request._headers = headers


class NulStrippingRoute(StrictJSONRoute):
    """A callback route whose handler removes NUL (and other C0 controls) from the strings it
    stores, so a NUL in a string value is not refused here (one in a key still is)."""

    nul_in_strings = True


def _path_parts(path: str) -> tuple[str | int, ...]:
    parts: list[str | int] = []
    for dotted in path.split(".") if path else []:
        name, _, rest = dotted.partition("[")
        if name:
            parts.append(name)
        for index in filter(None, rest.replace("]", "").split("[")) if rest else []:
            parts.append(int(index) if index.isascii() and index.isdigit() else index)
    return tuple(parts)
