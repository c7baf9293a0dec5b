"""The FastAPI application, given its services."""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractAsyncContextManager
from collections.abc import Callable
from typing import Any

from fastapi import APIRouter, Depends, FastAPI, Security
from fastapi.security import HTTPBearer

from app.api import (
    errors,
    routes_callbacks,
    routes_executions,
    routes_handlers,
    routes_health,
    routes_jobs,
    routes_metrics,
    routes_nodes,
    routes_queues,
    routes_schedules,
)
from app.api.auth import require_api_key
from app.api.body import BodyLimitMiddleware
from app.api.hot import HotRoutes
from app.api.schemas import problems

DESCRIPTION = """\
Jobwire stores jobs in PostgreSQL and dispatches each attempt as a signed HTTP POST
(Standard Webhooks) to a registered handler. Errors are RFC 9457 problem+json; validation
errors carry `errors: [{field, message}]`. Management routes take `Authorization: Bearer <api key>`
when API keys are configured; callback routes take the execution's callback token.
"""


def create_api(
    *,
    api_keys: Sequence[str] = (),
    max_request_bytes: int,
    lifespan: Callable[[FastAPI], AbstractAsyncContextManager[Any]] | None = None,
) -> FastAPI:
    app = FastAPI(title="Jobwire", version="0.1.0", description=DESCRIPTION, lifespan=lifespan,
                  docs_url="/docs", redoc_url=None)
    app.state.api_keys = tuple(k.encode() for k in api_keys)
    errors.install(app)

    # The Bearer scheme is declared for the OpenAPI document; ManagementRoute enforces the key.
    management = APIRouter(dependencies=[Depends(require_api_key), Security(HTTPBearer(auto_error=False))],
                           responses=problems(401, 422, 503))
    for module in (routes_handlers, routes_jobs, routes_executions, routes_nodes, routes_queues,
                   routes_schedules):
        management.include_router(module.router)
    callbacks = APIRouter(responses=problems(401, 403, 404, 409, 422, 503))
    callbacks.include_router(routes_callbacks.router)

    app.include_router(management)
    app.include_router(callbacks)
    app.include_router(routes_health.router)
    app.include_router(routes_metrics.router)
    app.add_middleware(BodyLimitMiddleware, limit=max_request_bytes)
    app.add_middleware(HotRoutes, limit=max_request_bytes)  # outermost: before the body cap's wrapping
    return app
