"""PUT/GET/DELETE /v1/handlers."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Request
from starlette.responses import Response

from app.api.body import ManagementRoute
from app.api.fields import Name
from app.api.handlers.models import HandlerIn, HandlerList, HandlerOut
from app.api.handlers.views import handler_view
from app.api.responses import FastJSON, problems
from app.api.services import services_of
from app.services.handlers import HandlerSpec

router = APIRouter(prefix="/v1/handlers", tags=["handlers"], route_class=ManagementRoute)
HandlerName = Annotated[Name, Path(description="handler name")]


@router.put("/{name}", response_model=HandlerOut, status_code=200,
            responses={201: {"model": HandlerOut, "description": "created; the response carries the signing secret"}})
async def put_handler(name: HandlerName, body: HandlerIn, request: Request) -> Response:
    """Register (201, with the `secret` shown only now) or replace (200) a handler."""
    s = services_of(request)
    handler, created = await s.handlers.put(
        name, HandlerSpec(url=body.url, timeout_seconds=body.timeout_seconds,
                          max_concurrency=body.max_concurrency, stateful=body.stateful))
    return FastJSON(handler_view(handler, with_secret=created), status_code=201 if created else 200)


@router.get("", response_model=HandlerList)
async def list_handlers(request: Request) -> Response:
    s = services_of(request)
    return FastJSON({"items": [handler_view(h) for h in await s.handlers.list()]})


@router.get("/{name}", response_model=HandlerOut, responses=problems(404))
async def get_handler(name: HandlerName, request: Request) -> Response:
    s = services_of(request)
    return FastJSON(handler_view(await s.handlers.get(name)))


@router.delete("/{name}", status_code=204, responses=problems(404, 409))
async def delete_handler(name: HandlerName, request: Request) -> Response:
    """409 while ENQUEUED or PROCESSING executions, or schedules, use it."""
    s = services_of(request)
    await s.handlers.delete(name)
    return Response(status_code=204)
