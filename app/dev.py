"""`jobwire dev`: a node on the embedded PostgreSQL that serves a sample handler itself.

The handler, `echo`, answers each job with its payload as the result. It is the SDK's handler
toolkit (jobwire.handler) mounted at ECHO_PATH on the node's own port, registered under that name
at every start (its URL follows the port; a new signing secret replaces the others, since the
previous run's secret is not known any more), so a first job needs no second program:
`jobwire dev` prints the command that enqueues it.
"""

from __future__ import annotations

import shlex
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI
from jobwire.handler import Context, HandlerApp, Job, asgi_app
from starlette.types import Receive, Scope, Send

from app.config import Settings
from app.main import create_app
from app.services.handlers import HandlerService, HandlerSpec

ECHO = "echo"
ECHO_PATH = "/_dev/echo"
ECHO_URL_PATH = ECHO_PATH + "/"  # the mount's own path: without the slash it answers a redirect


async def echo(job: Job, ctx: Context) -> Any:
    """The sample handler: the job's payload is its result."""
    return job.payload


class Deferred:
    """An ASGI app that is set once the node has started (the handler's secret is made then); 503
    before that."""

    def __init__(self) -> None:
        self.app: HandlerApp | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self.app is None:
            await send({"type": "http.response.start", "status": 503, "headers": [(b"retry-after", b"1")]})
            await send({"type": "http.response.body", "body": b""})
            return
        await self.app(scope, receive, send)


async def register_echo(handlers: HandlerService, url: str) -> str:
    """Registers (or points) the `echo` handler at `url`; its signing secret, new at each start."""
    handler, created = await handlers.put(ECHO, HandlerSpec(url=url))
    if created:
        return handler.secret
    return (await handlers.add_secret(ECHO, expire_others_after=0)).secret


def create_dev_app(settings: Settings, *, environ: Any = None) -> FastAPI:
    """The node of `jobwire serve` with the sample handler mounted and registered at start-up."""
    app = create_app(settings, environ=environ)
    handler = Deferred()
    app.mount(ECHO_PATH, handler)
    node_lifespan = app.router.lifespan_context

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[Any]:
        async with node_lifespan(app) as state:
            secret = await register_echo(app.state.services.handlers, settings.effective_public_url + ECHO_URL_PATH)
            handler.app = asgi_app(echo, secret)
            try:
                yield state
            finally:
                await handler.app.shutdown(grace=1.0)

    app.router.lifespan_context = lifespan
    return app


def first_job_lines(settings: Settings) -> list[str]:
    """What `jobwire dev` prints once it serves: where the sample handler is and the commands of
    a first job, ready to paste."""
    base = settings.effective_public_url
    auth = " -H 'authorization: Bearer <key>'" if settings.api_keys else ""
    body = shlex.quote('{"handler": "echo", "payload": {"hello": "world"}}')
    return [
        f"jobwire dev: the sample handler `{ECHO}` answers at {base}{ECHO_URL_PATH} (registered); a first job:",
        "",
        f"  id=$(curl -s -X POST {base}/v1/jobs -H 'content-type: application/json'{auth} -d {body} | jq -r .id)",
        f"  curl -s {base}/v1/executions/$id{auth} | jq '{{state, result}}'",
        "",
        f"API documentation: {base}/docs",
    ]
