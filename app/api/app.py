"""The FastAPI application, given its services."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractAsyncContextManager
from typing import Any

from fastapi import FastAPI, Security
from fastapi.security import HTTPBearer

from app.api import errors
from app.api.body import BodyLimitMiddleware
from app.api.callbacks.routes import router as callbacks
from app.api.executions.routes import router as executions
from app.api.handlers.routes import router as handlers
from app.api.health.routes import router as health
from app.api.jobs.routes import router as jobs
from app.api.nodes.routes import router as nodes
from app.api.queues.routes import router as queues
from app.api.responses import problems
from app.api.schedules.routes import router as schedules

DESCRIPTION = """\
Jobwire stores jobs in PostgreSQL and dispatches each attempt as a signed HTTP POST
(Standard Webhooks) to a registered handler. Errors are RFC 9457 problem+json; validation
errors carry `errors: [{field, message}]`. Management routes take `Authorization: Bearer <api key>`
when API keys are configured; callback routes take the execution's callback token.
"""

MANAGEMENT_ROUTERS = (handlers, jobs, executions, nodes, queues, schedules)


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

    # The API key is checked in one place: ManagementRoute, the route class of every management
    # router, before the body is read. The Bearer scheme here only declares it in the OpenAPI document.
    # Each router is included in the application itself: a level of routers costs every request
    # its own matching.
    bearer = Security(HTTPBearer(auto_error=False))
    for router in MANAGEMENT_ROUTERS:
        app.include_router(router, dependencies=[bearer], responses=problems(401, 422, 503))
    app.include_router(callbacks, responses=problems(401, 403, 404, 409, 422, 503))
    app.include_router(health)
    app.add_middleware(BodyLimitMiddleware, limit=max_request_bytes)
    return app
