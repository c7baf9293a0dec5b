"""The FastAPI application, given its services."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractAsyncContextManager
from importlib import resources
from typing import Any

from fastapi import FastAPI
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.routing import iter_route_contexts
from starlette.requests import Request
from starlette.responses import HTMLResponse
from starlette.staticfiles import StaticFiles

from app.api import errors
from app.api.body import BodyLimitMiddleware, ManagementRoute
from app.api.direct import BODY_MODELS, MARK, DirectRoutes
from app.api.callbacks.routes import router as callbacks
from app.api.executions.bulk import router as bulk_executions
from app.api.executions.routes import router as executions
from app.api.handlers.routes import router as handlers
from app.api.health.routes import router as health
from app.api.jobs.routes import router as jobs
from app.api.nodes.routes import router as nodes
from app.api.queues.routes import router as queues
from app.api.responses import Problem, problems
from app.api.schedules.routes import router as schedules

DESCRIPTION = """\
Jobwire stores jobs in PostgreSQL and dispatches each attempt as a signed HTTP POST
(Standard Webhooks) to a registered handler. Errors are RFC 9457 problem+json; validation
errors carry `errors: [{field, message}]`. Management routes take `Authorization: Bearer <api key>`
when API keys are configured; callback routes take the execution's callback token.
"""

MANAGEMENT_ROUTERS = (handlers, jobs, bulk_executions, executions, nodes, queues, schedules)


def create_api(
    *,
    api_keys: Sequence[str] = (),
    max_request_bytes: int,
    lifespan: Callable[[FastAPI], AbstractAsyncContextManager[Any]] | None = None,
) -> FastAPI:
    app = FastAPI(title="Jobwire", version="0.1.0", description=DESCRIPTION, lifespan=lifespan,
                  docs_url=None, redoc_url=None)
    app.state.api_keys = tuple(k.encode() for k in api_keys)
    errors.install(app)

    # The API key is checked in one place: ManagementRoute, the route class of every management
    # router, before the body is read; the document declares the Bearer scheme on those routes
    # (_complete_document), not a dependency, which would cost every request its solving. Each
    # router is included in the application itself: a level of routers costs every request its
    # own matching.
    for router in MANAGEMENT_ROUTERS:
        app.include_router(router, responses={**problems(401, 422, 503), **NOT_JSON})
    app.include_router(callbacks, responses=problems(401, 403, 404, 409, 422, 503))
    app.include_router(health)
    app.add_middleware(BodyLimitMiddleware, limit=max_request_bytes)
    app.add_middleware(DirectRoutes, limit=max_request_bytes)  # outside the body cap: it checks the length itself
    _complete_document(app)
    _add_docs(app)
    return app


# Management routes take a body as JSON only (ManagementRoute, app/api/body.py).
NOT_JSON: dict[int | str, dict[str, Any]] = {415: {
    "model": Problem, "description": "a request body not sent as JSON (content-type application/json, or "
                                     "application/<something>+json)",
    "content": {"application/problem+json": {"schema": {"$ref": "#/components/schemas/Problem"}}}}}
DOCS_ASSETS = "/docs/assets"


def _add_docs(app: FastAPI) -> None:
    """/docs, the interactive page (Swagger UI), with its script, style and icon served by the
    node itself from the files the fastapi-offline package ships: no CDN, works offline."""
    assets = resources.files("fastapi_offline") / "static"
    app.mount(DOCS_ASSETS, StaticFiles(directory=str(assets)), name="docs-assets")

    async def docs(request: Request) -> HTMLResponse:
        root = request.scope.get("root_path", "").rstrip("/")
        return get_swagger_ui_html(
            openapi_url=f"{root}{app.openapi_url}",
            title=f"{app.title} API",
            swagger_js_url=f"{root}{DOCS_ASSETS}/swagger-ui-bundle.js",
            swagger_css_url=f"{root}{DOCS_ASSETS}/swagger-ui.css",
            swagger_favicon_url=f"{root}{DOCS_ASSETS}/favicon.png",
            # No badge fetched from the public validator (swagger.io) either.
            swagger_ui_parameters={"validatorUrl": None},
        )

    app.add_route("/docs", docs, include_in_schema=False)


def _complete_document(app: FastAPI) -> None:
    """What FastAPI cannot see in the OpenAPI document: the Bearer scheme of the management routes
    (checked by their route class), and the body models of the direct routes, whose endpoints take
    the request alone (app/api/direct.py), declared among the components as any other body."""
    generate = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            schema = generate()
            components = schema.setdefault("components", {})
            components.setdefault("securitySchemes", {})["HTTPBearer"] = {"type": "http", "scheme": "bearer"}
            for context in iter_route_contexts(app.routes):
                if isinstance(context.original_route, ManagementRoute):
                    for method in context.methods or ():
                        schema["paths"][context.path_format][method.lower()]["security"] = [{"HTTPBearer": []}]
            components = components.setdefault("schemas", {})
            for path in schema.get("paths", {}).values():
                for operation in path.values():
                    if operation.pop(MARK, False):
                        body = operation["requestBody"]["content"]["application/json"]["schema"]
                        name = body["$ref"].rsplit("/", 1)[1]
                        found = BODY_MODELS[name].model_json_schema(ref_template="#/components/schemas/{model}")
                        components.update(found.pop("$defs", {}))
                        components[name] = found
        return app.openapi_schema or schema

    app.openapi = openapi  # type: ignore[method-assign]
