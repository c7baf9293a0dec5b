"""Direct routes: the few routes every job passes through, served without FastAPI's routing walk
and parameter solving, but as the routes they are.

`POST /v1/jobs` and `POST /v1/executions/{id}/complete` carry every job (`/v1/jobs/batch` most
of them). Through FastAPI most of a request's CPU goes to routing over every route, dependency
solving and the request and response machinery, none of which these routes need
(bench/README.md, "Figures the code rests on", has the costs and the drain they bought).

Nothing is written twice for them. A direct route is a FastAPI route like any other: its path,
method, route class (the API-key check, the body cap, strict JSON), endpoint and OpenAPI
declaration are declared once, in its resource's routes.py; its endpoint takes the request alone
and reads its body with body_as(request, Model) and its headers from the request, so FastAPI's
path and this one run the same code. DirectRoutes, a middleware inside FastAPI's own (the error
handler, the telemetry middleware: spans and metrics come as for every route), asks those route
objects whether they match a request (Starlette's own matching) and runs the route's
direct_handler: the route class's checks around the endpoint. What it does not serve goes on to
FastAPI untouched: another method or content type, a body over the cap or streamed in chunks.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Any

from fastapi import FastAPI
from fastapi.routing import RouteContext, iter_route_contexts
from pydantic import BaseModel
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Match
from starlette.types import ASGIApp, Receive, Scope, Send

from app.api.body import StrictJSONRoute, is_json
from app.api.errors import problem_for

Handler = Callable[[Request], Coroutine[Any, Any, Response]]


# The body models of the direct routes, by name (the OpenAPI document declares them: app/api/app.py).
BODY_MODELS: dict[str, type[BaseModel]] = {}
MARK = "x-jobwire-direct"


def direct(body: type[BaseModel], *, headers: dict[str, str] | None = None,
           path: dict[str, str] | None = None) -> dict[str, Any]:
    """The route declaration (openapi_extra) of a direct route's endpoint, which takes the request
    alone: its JSON body `body` (required), its header parameters (name → description) and its
    path parameters as UUIDs (name → description). Marks the route as direct."""
    BODY_MODELS[body.__name__] = body
    parameters = [{"name": name, "in": "header", "required": False, "description": text,
                   "schema": {"type": "string"}} for name, text in (headers or {}).items()]
    parameters += [{"name": name, "in": "path", "required": True, "description": text,
                    "schema": {"type": "string", "format": "uuid"}} for name, text in (path or {}).items()]
    return {MARK: True,
            "requestBody": {"required": True, "content": {"application/json": {
                "schema": {"$ref": f"#/components/schemas/{body.__name__}"}}}},
            **({"parameters": parameters} if parameters else {})}


def direct_routes(app: FastAPI) -> list[tuple[RouteContext, StrictJSONRoute]]:
    """The direct routes as the application serves them (the route context matches a request
    with its routers' prefixes; the original route is the declared one, of its route class)."""
    return [(c, c.original_route) for c in iter_route_contexts(app.routes)
            if isinstance(c.original_route, StrictJSONRoute) and (c.original_route.openapi_extra or {}).get(MARK)]


class DirectRoutes:
    def __init__(self, app: ASGIApp, limit: int) -> None:
        self.app = app
        self.limit = limit
        self._routes: list[tuple[RouteContext, Handler]] | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        if self._routes is None:  # the routes as FastAPI has them, once they are all included
            self._routes = [(context, route.direct_handler()) for context, route in direct_routes(scope["app"])]
        for context, direct_handler in self._routes:
            match, child = context.matches(scope)
            if match is Match.FULL:
                handler = direct_handler
                break
        else:
            await self.app(scope, receive, send)
            return
        headers = dict(scope["headers"])
        declared = headers.get(b"content-length", b"")
        if not is_json(headers.get(b"content-type")) or not declared.isdigit() or int(declared) > self.limit:
            await self.app(scope, receive, send)  # FastAPI answers these, or the body cap does
            return
        request = Request({**scope, **child}, receive)
        try:
            response = await handler(request)
        except Exception as exc:  # the same problem documents FastAPI's exception handlers answer
            response = problem_for(exc, request)
        await response(scope, receive, send)
