"""Fixtures of the SDK's tests: a live Jobwire with an `echo` handler, and the SDK's clients on it.

The Jobwire server runs in the test's own event loop, so the blocking JobwireClient is driven
from a worker thread. `client` gives either client behind one awaitable face (`Awaiting`: every
method awaited, listings collected into lists), so each behaviour is written once and proved
for both."""

from __future__ import annotations

import asyncio
import functools
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

import jobwire
from tests.conftest import HandlerServer, RunningServer, register, reply_result

FAST = jobwire.Retries(attempts=4, base_delay=0.05, max_delay=0.2)  # retries that keep tests quick


@dataclass
class Live:
    """A running Jobwire (API and dispatcher) with the handler `echo` registered: it answers
    `{"result": <payload>}`; `handler.route(path, behaviour)` adds others."""

    url: str
    server: RunningServer
    handler: HandlerServer
    echo: dict[str, Any]  # the registration's answer (with its secret)


@pytest.fixture
async def live(jobwire: Callable[..., Awaitable[RunningServer]], handler: HandlerServer) -> Live:
    server = await jobwire()
    async with httpx.AsyncClient(base_url=server.url, timeout=10) as http:
        echo = await register(http, "echo", handler.route("/echo", reply_result))
    return Live(server.url, server, handler, echo)


async def in_thread(method: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """A JobwireClient's call, in a worker thread; an iterator is collected into a list."""

    def call() -> Any:
        result = method(*args, **kwargs)
        return list(result) if isinstance(result, Iterator) else result

    return await asyncio.to_thread(call)


async def awaited(method: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """An AsyncJobwireClient's call, awaited; an async iterator is collected into a list."""
    result = method(*args, **kwargs)
    if isinstance(result, AsyncIterator):  # an async generator, or a feed (jobwire.resources.AsyncEventFeed)
        return [item async for item in result]
    return await result


class Awaiting:
    """Either client behind one face: every method is awaited (`invoke` is in_thread or awaited),
    on the client and on its resources (`client.executions.get`)."""

    def __init__(self, sdk: Any, invoke: Callable[..., Awaitable[Any]]) -> None:
        self.sdk = sdk
        self._invoke = invoke

    def __getattr__(self, name: str) -> Any:
        found = getattr(self.sdk, name)
        if callable(found):
            return functools.partial(self._invoke, found)
        return Awaiting(found, self._invoke)


MakeClient = Callable[..., Any]


@pytest.fixture(params=["sync", "async"])
async def make_client(request: pytest.FixtureRequest) -> AsyncIterator[MakeClient]:
    """`make_client(url, **options)`: a JobwireClient or an AsyncJobwireClient (the test runs once
    with each), retrying quickly unless `retries` is given."""
    made: list[Any] = []

    def make(url: str, **options: Any) -> Any:
        options.setdefault("retries", FAST)
        if request.param == "sync":
            client = Awaiting(jobwire.JobwireClient(url, **options), in_thread)
        else:
            client = Awaiting(jobwire.AsyncJobwireClient(url, **options), awaited)
        made.append(client)
        return client

    yield make
    for client in made:
        await client.close()


@pytest.fixture
def client(live: Live, make_client: MakeClient) -> Any:
    """A client (sync or async, see make_client) on the live server."""
    return make_client(live.url)
