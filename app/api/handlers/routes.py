"""PUT/GET/DELETE /v1/handlers, and their signing secrets: POST/DELETE /v1/handlers/{name}/secrets."""

from __future__ import annotations

from typing import Annotated
from uuid import UUID

from fastapi import APIRouter, Path, Query, Request
from starlette.responses import Response

from app.api.auth import ManagementRoute, queues_of, requires
from app.api.fields import Name
from app.api.handlers.models import (
    HandlerBatchIn, HandlerIn, HandlerList, HandlerOut, KeyOut, KeyPage, RateLimitIn, SecretCreated, SecretIn,
)
from app.api.handlers.views import handler_view, key_view, new_secret_view
from app.api.responses import FastJSON, problems
from app.api.services import services_of
from app.domain.access import Scope, require_every_queue
from app.domain.batching import Batch
from app.domain.handlers import RateLimit
from app.domain.keys import KeyState
from app.services.handlers import HandlerSpec

router = APIRouter(prefix="/v1/handlers", tags=["handlers"], route_class=ManagementRoute)
HandlerName = Annotated[Name, Path(description="handler name")]


def _batch(batch: HandlerBatchIn | None) -> Batch | None:
    return None if batch is None else Batch(max_size=batch.max_size, max_wait_ms=batch.max_wait_ms)


def _rate(limit: RateLimitIn | None) -> RateLimit | None:
    return None if limit is None else RateLimit(limit=limit.limit, period_seconds=limit.period_seconds)


@router.put("/{name}", operation_id="putHandler", response_model=HandlerOut, status_code=200,
            responses={201: {"model": HandlerOut, "description": "created; the response carries the signing secret"}})
@requires(Scope.ADMIN)
async def put_handler(name: HandlerName, body: HandlerIn, request: Request) -> Response:
    """Register (201, with the `secret` shown only now) or replace (200) a handler."""
    s = services_of(request)
    handler, created = await s.handlers.put(
        name, HandlerSpec(url=body.url, timeout_seconds=body.timeout_seconds,
                          max_concurrency=body.max_concurrency, stateful=body.stateful,
                          key_concurrency=body.key_concurrency, rate_limit=_rate(body.rate_limit),
                          key_rate_limit=_rate(body.key_rate_limit), adaptive=body.adaptive,
                          batch=_batch(body.batch)))
    return FastJSON(handler_view(handler, with_secret=created), status_code=201 if created else 200)


@router.get("", operation_id="listHandlers", response_model=HandlerList)
@requires(Scope.READ)
async def list_handlers(request: Request) -> Response:
    s = services_of(request)
    return FastJSON({"items": [handler_view(h) for h in await s.handlers.list()]})


@router.get("/{name}", operation_id="getHandler", response_model=HandlerOut, responses=problems(404))
@requires(Scope.READ)
async def get_handler(name: HandlerName, request: Request) -> Response:
    s = services_of(request)
    return FastJSON(handler_view(await s.handlers.get(name)))


@router.delete("/{name}", operation_id="deleteHandler", status_code=204, responses=problems(404, 409))
@requires(Scope.ADMIN)
async def delete_handler(name: HandlerName, request: Request) -> Response:
    """409 while ENQUEUED or PROCESSING executions, or schedules, use it."""
    s = services_of(request)
    await s.handlers.delete(name)
    return Response(status_code=204)


@router.post("/{name}/secrets", operation_id="addHandlerSecret",
             response_model=SecretCreated, status_code=201, responses=problems(404, 409))
@requires(Scope.ADMIN)
async def add_handler_secret(name: HandlerName, request: Request, body: SecretIn | None = None) -> Response:
    """Add a signing secret (rotation without downtime): from now on each dispatch carries one
    `v1,` signature per active secret, so the handler verifies with the old or the new one. The
    new `secret` is shown in this response only. With `expire_others_after_seconds` the handler's
    other secrets stop signing that many seconds from now; else delete them when the handler has
    the new one (DELETE …/secrets/{id}). 409 when the handler already holds 10 active secrets."""
    s = services_of(request)
    added = await s.handlers.add_secret(name, body.expire_others_after_seconds if body else None)
    return FastJSON(new_secret_view(added), status_code=201)


@router.delete("/{name}/secrets/{secret_id}", operation_id="deleteHandlerSecret",
               status_code=204, responses=problems(404, 409))
@requires(Scope.ADMIN)
async def delete_handler_secret(name: HandlerName, secret_id: Annotated[UUID, Path(description="secret id")],
                                request: Request) -> Response:
    """Retire a signing secret at once. 409 for the handler's last secret that does not expire (it
    would be left none to sign with): add a new one first."""
    s = services_of(request)
    await s.handlers.delete_secret(name, secret_id)
    return Response(status_code=204)


KeyName = Annotated[Name, Path(description="concurrency key")]


@router.get("/{name}/keys", operation_id="listHandlerKeys", response_model=KeyPage, responses=problems(404))
@requires(Scope.READ)
async def list_handler_keys(
    name: HandlerName,
    request: Request,
    state: Annotated[KeyState | None, Query(description="waiting: with jobs ENQUEUED; throttled: with jobs ENQUEUED "
                                                        "and held back now (paused, Retry-After, rate limit, "
                                                        "key_concurrency); paused; omitted: every key")] = None,
    limit: Annotated[int, Query(ge=1, le=500, description="items per page")] = 100,
    cursor: Annotated[str | None, Query(max_length=400, description="the previous page's `next_cursor`; omitted: "
                                                                     "the first page")] = None,
) -> Response:
    """The handler's concurrency keys in key order: those with jobs ENQUEUED or PROCESSING, and
    those paused or with a rate window open. Keys need no registration. A key of the API limited
    to queues is refused (403): a concurrency key holds jobs of every queue."""
    require_every_queue(queues_of(request), "a handler's concurrency keys")
    s = services_of(request)
    items, next_cursor = await s.keys.page(name, state, cursor, limit)
    return FastJSON({"items": [key_view(k) for k in items], "next_cursor": next_cursor})


@router.post("/{name}/keys/{key}/pause", operation_id="pauseHandlerKey", response_model=KeyOut,
             responses=problems(404))
@requires(Scope.OPERATE)
async def pause_handler_key(name: HandlerName, key: KeyName, request: Request) -> Response:
    """Hold the key's jobs (they stay ENQUEUED and spend no attempt) while the handler's other
    keys run; calls in flight finish. Not for an API key limited to queues (403)."""
    require_every_queue(queues_of(request), "a handler's concurrency key")
    s = services_of(request)
    return FastJSON(key_view(await s.keys.set_paused(name, key, True)))


@router.post("/{name}/keys/{key}/resume", operation_id="resumeHandlerKey", response_model=KeyOut,
             responses=problems(404))
@requires(Scope.OPERATE)
async def resume_handler_key(name: HandlerName, key: KeyName, request: Request) -> Response:
    """Let the key's jobs be claimed again. Not for an API key limited to queues (403)."""
    require_every_queue(queues_of(request), "a handler's concurrency key")
    s = services_of(request)
    return FastJSON(key_view(await s.keys.set_paused(name, key, False)))
