"""Mounts the dashboard on the node's application: its pages at /ui, its assets at /ui/static
(served by the node: no CDN, no build step), `/` redirecting to /ui. None of it is in the OpenAPI
document."""

from __future__ import annotations

from importlib import resources

from fastapi import FastAPI
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.staticfiles import StaticFiles

from app.ui.access import Refused, SignInRequired, sign_in_location
from app.ui.pages import (dead_letters, executions, flow, handlers, nodes, overview, schedules, signing_in,
                          subscriptions, workflows)
from app.ui.render import render

# Each page's router; a new page adds its module here and its line to NAV (app/ui/nav.py).
PAGES = (signing_in.router, overview.router, executions.router, dead_letters.router, workflows.router,
         schedules.router, handlers.router, flow.router, nodes.router, subscriptions.router)


def install(app: FastAPI) -> None:
    for router in PAGES:
        app.include_router(router, include_in_schema=False)
    app.mount("/ui/static", StaticFiles(directory=str(resources.files("app.ui") / "static")), name="ui-static")

    async def home(request: Request) -> Response:
        return RedirectResponse("/ui", status_code=307)

    app.add_route("/", home, include_in_schema=False)

    async def to_sign_in(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, SignInRequired)
        return RedirectResponse(sign_in_location(exc.next_path), status_code=303)

    async def refused(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, Refused)
        return render(request, None, "refused.html", status=exc.status, message=exc.message)

    app.add_exception_handler(SignInRequired, to_sign_in)
    app.add_exception_handler(Refused, refused)
