"""The three routes every job passes through, served below the framework.

`POST /v1/jobs`, `POST /v1/jobs/batch` and `POST /v1/executions/{id}/complete` carry every
job. Through FastAPI each request pays for its routing, its middleware stack, dependency
solving and the request and response wrappers: about as much CPU as the database statement
it runs (py-spy, `python -m bench --only enqueue_single --profile DIR`). HotRoutes, an ASGI
middleware in front of FastAPI's routing, serves a well-formed request of those routes itself
with the same pieces the FastAPI routes use: the API-key check, the body cap, strict JSON
(app.domain.jsontext and check_storable), the same pydantic models, the same operations (routes_jobs,
routes_callbacks) and the same problem documents (errors.problem_for).

Whatever it does not serve as a matter of course goes on to FastAPI untouched, with the body
it read replayed: another content type, a refused API key, a body over the cap, JSON that does
not parse or validate, a malformed execution id. So every refusal of a request is written in
one place, and the OpenAPI document still describes these routes.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any
from uuid import UUID

import orjson
from pydantic import BaseModel, ValidationError
from starlette.requests import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app.api.auth import bearer_from, check_key
from app.api.errors import problem_for
from app.api.routes_callbacks import complete_attempt
from app.api.routes_jobs import enqueue_many, enqueue_one
from app.api.schemas import BatchIn, CompleteIn, JobIn
from app.api.services import Services
from app.domain.errors import Unauthenticated
from app.domain.jsonsafety import UnstorableJson, check_storable
from app.domain.jsontext import loads

Headers = dict[bytes, bytes]
Operation = Callable[[Services, Any, Headers, str], Awaitable[tuple[dict[str, Any], int]]]


@dataclass(frozen=True, slots=True)
class HotRoute:
    model: type[BaseModel]
    operation: Operation
    management: bool  # takes an API key (checked before the body is read)


def _text(headers: Headers, name: bytes) -> str | None:
    value = headers.get(name)
    return value.decode("latin-1") if value is not None else None


async def _enqueue(s: Services, body: JobIn, headers: Headers, _: str) -> tuple[dict[str, Any], int]:
    return await enqueue_one(s, body, _text(headers, b"idempotency-key"), _text(headers, b"traceparent"))


async def _enqueue_batch(s: Services, body: BatchIn, headers: Headers, _: str) -> tuple[dict[str, Any], int]:
    return await enqueue_many(s, body, _text(headers, b"traceparent"))


async def _complete(s: Services, body: CompleteIn, headers: Headers, execution_id: str) -> tuple[dict[str, Any], int]:
    return await complete_attempt(s, UUID(execution_id), body, bearer_from(_text(headers, b"authorization")))


ENQUEUE = HotRoute(JobIn, _enqueue, management=True)
ENQUEUE_BATCH = HotRoute(BatchIn, _enqueue_batch, management=True)
COMPLETE = HotRoute(CompleteIn, _complete, management=False)
_EXECUTIONS, _COMPLETE = "/v1/executions/", "/complete"


def match(path: str) -> tuple[HotRoute, str] | None:
    """The hot route of a POST to `path` and its execution id ("" when it has none)."""
    if path == "/v1/jobs":
        return ENQUEUE, ""
    if path == "/v1/jobs/batch":
        return ENQUEUE_BATCH, ""
    if path.startswith(_EXECUTIONS) and path.endswith(_COMPLETE):
        execution_id = path[len(_EXECUTIONS):-len(_COMPLETE)]
        if _is_uuid(execution_id):
            return COMPLETE, execution_id
    return None


def _is_uuid(text: str) -> bool:
    try:
        UUID(text)
    except ValueError:
        return False
    return True


def _is_json(content_type: bytes | None) -> bool:
    # FastAPI refuses a body without a content type; +json types it takes go to it too.
    return content_type is not None and content_type.partition(b";")[0].strip().lower() == b"application/json"


class HotRoutes:
    def __init__(self, app: ASGIApp, limit: int) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        path: str = scope["path"]
        root = scope.get("root_path", "")
        found = match(path[len(root):] if root and path.startswith(root) else path)
        headers: Headers = {}
        for name, value in scope["headers"]:
            headers.setdefault(name, value)  # the first of a repeated header, as Starlette reads it
        declared = headers.get(b"content-length", b"0")
        if (found is None or not _is_json(headers.get(b"content-type")) or not declared.isdigit()
                or int(declared) > self.limit):
            await self.app(scope, receive, send)
            return
        route, execution_id = found
        services: Services = scope["app"].state.services
        if route.management:
            try:
                check_key(scope["app"].state.api_keys, _text(headers, b"authorization"))
            except Unauthenticated:
                await self.app(scope, receive, send)
                return
        body, more = await self._read(receive)
        if body is None:  # the client went away
            return
        document = None if more or len(body) > self.limit else _parse(route, body)
        if document is None:
            await self.app(scope, _replay(body, more, receive), send)
            return
        try:
            view, status = await route.operation(services, document, headers, execution_id)
        except Exception as exc:
            await problem_for(exc, Request(scope))(scope, receive, send)
            return
        content = orjson.dumps(view, option=orjson.OPT_UTC_Z)
        await send({"type": "http.response.start", "status": status,
                    "headers": [(b"content-type", b"application/json"),
                                (b"content-length", str(len(content)).encode())]})
        await send({"type": "http.response.body", "body": content})

    async def _read(self, receive: Receive) -> tuple[bytes | None, bool]:
        """The body, and whether more of it is still to come (it passed the cap midway)."""
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                return None, False
            chunk = message.get("body", b"")
            chunks.append(chunk)
            size += len(chunk)
            more = message.get("more_body", False)
            if not more or size > self.limit:
                return b"".join(chunks), more


def _parse(route: HotRoute, body: bytes) -> BaseModel | None:
    """The body as the route's model; None for anything FastAPI should refuse (and word)."""
    try:
        document = loads(body)
        check_storable(document)
        return route.model.model_validate(document)
    except (orjson.JSONDecodeError, UnstorableJson, ValidationError):
        return None


def _replay(body: bytes, more: bool, receive: Receive) -> Receive:
    """A receive that hands over what was read, then goes on with the client's own."""
    pending = True

    async def replayed() -> Message:
        nonlocal pending
        if pending:
            pending = False
            return {"type": "http.request", "body": body, "more_body": more}
        return await receive()

    return replayed
