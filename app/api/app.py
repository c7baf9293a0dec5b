"""The FastAPI application, given its services."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractAsyncContextManager
from importlib import resources
import re
from typing import Any

from fastapi import FastAPI
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.routing import iter_route_contexts
from starlette.requests import Request
from starlette.responses import HTMLResponse
from starlette.staticfiles import StaticFiles

from app.api import draining, errors
from app.api.api_keys.routes import router as api_keys
from app.api.auth import ManagementRoute
from app.api.body import BodyLimitMiddleware, StrictJSONRoute
from app.api.direct import BODY_MODELS, MARK, DirectRoutes
from app.api.examples import SCHEMA_EXAMPLES
from app.api.callbacks.routes import router as callbacks
from app.api.executions.bulk import router as bulk_executions
from app.api.events.routes import router as events
from app.api.executions.routes import router as executions
from app.api.handlers.routes import router as handlers
from app.api.health.routes import router as health
from app.api.jobs.routes import router as jobs
from app.api.nodes.routes import router as nodes
from app.api.queues.routes import router as queues
from app.api.responses import Problem, problem_response, problems
from app.api.schedules.routes import router as schedules
from app.api.subscriptions.routes import router as subscriptions
from app.api.workflows.routes import router as workflows
from app.api.tags import TAGS
from app.api.webhooks.routes import router as webhooks
from app.domain.access import Scope, granting

DESCRIPTION = """\
Jobwire stores jobs in PostgreSQL and dispatches each attempt as a signed HTTP POST
(Standard Webhooks) to a registered handler. Errors are RFC 9457 problem+json; validation
errors carry `errors: [{field, message}]`. Management routes take `Authorization: Bearer <api key>`
(security scheme `HTTPBearer`) with the scope each operation names (`x-jobwire-scope`: `read`,
`enqueue`, `operate` or `admin`), unless no key exists at all; callback routes take the execution's
callback token (`CallbackToken`); health, readiness and metrics take nothing.
"""

MANAGEMENT_ROUTERS = (handlers, jobs, workflows, bulk_executions, executions, events, subscriptions, nodes, queues,
                      schedules, api_keys)


def create_api(
    *,
    api_keys: Sequence[str] = (),
    max_request_bytes: int,
    lifespan: Callable[[FastAPI], AbstractAsyncContextManager[Any]] | None = None,
) -> FastAPI:
    app = FastAPI(title="Jobwire", version="0.1.0", description=DESCRIPTION, lifespan=lifespan,
                  docs_url=None, redoc_url=None, openapi_tags=TAGS)
    app.state.api_keys = tuple(k.encode() for k in api_keys)
    draining.install(app)  # set as the node's shutdown begins: the event streams end (app/api/draining.py)
    errors.install(app)

    # The API key and its scope are checked in one place: ManagementRoute, the route class of every
    # management router, before the body is read; the document declares the Bearer scheme and the
    # scope on those routes (_complete_document), not a dependency, which would cost every request
    # its solving. Each
    # router is included in the application itself: a level of routers costs every request its
    # own matching.
    for router in MANAGEMENT_ROUTERS:
        app.include_router(router, responses={**problems(401, 422, 503), **FORBIDDEN, **NOT_JSON})
    app.include_router(callbacks, responses=problems(401, 403, 404, 409, 422, 503))
    app.include_router(health)
    app.webhooks.include_router(webhooks)  # documented only: what the dispatcher sends to handlers
    app.add_middleware(BodyLimitMiddleware, limit=max_request_bytes)
    app.add_middleware(DirectRoutes, limit=max_request_bytes)  # outside the body cap: it checks the length itself
    _complete_document(app)
    _add_docs(app)
    return app


# Management routes take a body as JSON only (ManagementRoute, app/api/auth.py).
NOT_JSON: dict[int | str, dict[str, Any]] = {415: problem_response(
    "a request body not sent as JSON (content-type application/json, or application/<something>+json)")}
# A key without the route's scope, or limited to other queues (app/api/auth.py).
FORBIDDEN: dict[int | str, dict[str, Any]] = {403: problem_response(
    "the API key lacks the scope this operation needs (`x-jobwire-scope`), or is limited to other queues; "
    "`detail` names what it lacks")}
# Any request body over JOBWIRE_MAX_REQUEST_BYTES (BodyLimitMiddleware), whichever route it is for.
TOO_LARGE = problems(413)[413]
DOCS_ASSETS = "/docs/assets"
SECURITY_SCHEMES = {
    "HTTPBearer": {"type": "http", "scheme": "bearer", "description":
                   "an API key: a bootstrap key (JOBWIRE_API_KEYS, every scope) or a database key (`jw_…`, "
                   "POST /v1/api-keys) with the scope the operation names in `x-jobwire-scope`; not needed while "
                   "no key exists at all"},
    "CallbackToken": {"type": "http", "scheme": "bearer", "description":
                      "the execution's callback token: `callback.token` of the dispatch request, valid for that "
                      "execution and attempt"},
}
SCOPE_MARK = "x-jobwire-scope"


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
    """What FastAPI cannot see in the OpenAPI document: the security of every operation (checked by
    the route classes, app/api/auth.py): a management route's Bearer API key and its scope (in
    `x-jobwire-scope` and the description), a callback route's callback token, none for the rest;
    the body models of the direct routes, whose endpoints take the request alone
    (app/api/direct.py), declared among the components as any other body; the problem document
    (its responses name no model: app/api/responses.py); the 413 of every operation that takes
    a body (the body cap answers it before any route); and the schemas' examples."""
    generate = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            schema = generate()
            components = schema.setdefault("components", {})
            components.setdefault("securitySchemes", {}).update(SECURITY_SCHEMES)
            for context in iter_route_contexts(app.routes):
                route = context.original_route
                for method in context.methods or ():
                    operation = schema["paths"].get(context.path_format, {}).get(method.lower())
                    if operation is None:
                        continue  # not in the document (/docs, /openapi.json)
                    if isinstance(route, ManagementRoute):
                        operation["security"] = [{"HTTPBearer": []}]
                        operation[SCOPE_MARK] = route.scope.value
                        note = _scope_note(route.scope)
                        description = operation.get("description")
                        operation["description"] = f"{description}\n\n{note}" if description else note
                    elif isinstance(route, StrictJSONRoute):
                        operation["security"] = [{"CallbackToken": []}]
                    else:
                        operation["security"] = []
                    if "requestBody" in operation or route.body_field is not None:
                        operation["responses"].setdefault("413", TOO_LARGE)
                    if route.summary is None:  # not the endpoint's name (`logs`): what it does
                        operation["summary"] = _summary(operation["operationId"])
                    for parameter in operation.get("parameters", ()):
                        if parameter["in"] == "query" and not parameter.get("required"):
                            _without_null(parameter)
            components = components.setdefault("schemas", {})
            problem = Problem.model_json_schema(ref_template="#/components/schemas/{model}")
            components.update(problem.pop("$defs", {}))
            components["Problem"] = problem
            for path in schema.get("paths", {}).values():
                for operation in path.values():
                    if operation.pop(MARK, False):
                        body = operation["requestBody"]["content"]["application/json"]["schema"]
                        name = body["$ref"].rsplit("/", 1)[1]
                        found = BODY_MODELS[name].model_json_schema(ref_template="#/components/schemas/{model}")
                        components.update(found.pop("$defs", {}))
                        components[name] = found
            for name, example in SCHEMA_EXAMPLES.items():
                components[name]["examples"] = [example]
        return app.openapi_schema or schema

    app.openapi = openapi  # type: ignore[method-assign]


def _summary(operation_id: str) -> str:
    """`listExecutionAttempts` → `List execution attempts`: the operationId as a sentence."""
    text = " ".join(re.findall(r"[A-Z]?[a-z]+", operation_id)).lower().replace("api key", "API key")
    return text[:1].upper() + text[1:]


def _without_null(parameter: dict[str, Any]) -> None:
    """An optional query parameter's schema without its `null` alternative (`X | None = None` in
    the route): a query string cannot say null, omitting the parameter is what None means, and a
    generator offers `X | unset` instead of a union it cannot send."""
    schema = parameter["schema"]
    alternatives = schema.get("anyOf", ())
    others = [a for a in alternatives if a != {"type": "null"}]
    if len(alternatives) == 2 and len(others) == 1:
        parameter["schema"] = {**others[0], **{k: v for k, v in schema.items() if k != "anyOf"}}


def _scope_note(scope: Scope) -> str:
    *others, last = [f"`{s.value}`" for s in granting(scope)]
    keys = f"{', '.join(others)} or {last}" if others else last
    return f"API key scope: `{scope.value}` (granted by a key with {keys})."
