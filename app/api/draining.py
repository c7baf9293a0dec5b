"""Whether the node is shutting down, for the responses that last (the event stream).

uvicorn's graceful shutdown stops accepting, then waits for every open response to end before it
runs the application's lifespan shutdown: a response that never ends by itself holds the node up
until `timeout_graceful_shutdown`, and the lifespan learns of the shutdown too late to end it.
So whoever runs the server says so first (`jobwire serve`'s server, app/cli.py, as its shutdown
begins): `begin_draining(app)`. Lasting responses watch `draining(app)`, end, and a request for
one from then on is answered 503.
"""

from __future__ import annotations

import asyncio

from starlette.applications import Starlette


def install(app: Starlette) -> None:
    """Gives a new application its (unset) draining event."""
    app.state.draining = asyncio.Event()


def draining(app: Starlette) -> asyncio.Event:
    """Set once the node's shutdown has begun."""
    return app.state.draining


def begin_draining(app: Starlette) -> None:
    """The node is shutting down: lasting responses end now (call it before uvicorn waits for them)."""
    draining(app).set()
