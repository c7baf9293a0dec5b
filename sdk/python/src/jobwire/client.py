"""`JobwireClient` and `AsyncJobwireClient`: the API grouped by resource, over two thin drivers.

What a method sends, whether it may be sent again and how its answer is read is written once
(the builders of `jobwire.resources`, `_protocol.py`, `_resend.py`); a driver only performs the
steps: an HTTP request on its httpx client, or a pause. The two clients therefore behave the
same, call for call::

    with JobwireClient("http://127.0.0.1:8000") as client:
        execution = client.jobs.enqueue("echo", {"hello": "world"})
        done = client.executions.wait(execution.id)
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Iterator, Mapping
from typing import Any, TypeVar

import httpx

from jobwire._protocol import Call, Done, Send, Sleep, Work, advance, following, start
from jobwire._retry import Retries
from jobwire._version import __version__
from jobwire.models import Health, Page, Readiness
from jobwire.resources import (
    ApiKeys,
    AsyncApiKeys,
    AsyncEvents,
    AsyncExecutions,
    AsyncHandlers,
    AsyncJobs,
    AsyncNodes,
    AsyncQueues,
    AsyncSchedules,
    AsyncSubscriptions,
    AsyncWorkflows,
    Events,
    Executions,
    Handlers,
    Jobs,
    Nodes,
    Queues,
    Schedules,
    Subscriptions,
    Workflows,
)
from jobwire.resources import health as probes

T = TypeVar("T")
USER_AGENT = f"jobwire-sdk/{__version__}"
STREAM_READ_SECONDS = 45.0  # three of the event stream's keepalive intervals


def base_url_of(url: str) -> str:
    """`url` as the clients' base URL; ValueError unless it is http(s)://host[:port][/prefix]."""
    try:
        parsed = httpx.URL(url)
    except (httpx.InvalidURL, TypeError) as exc:
        raise ValueError(f"not a URL: {url!r} ({exc})") from None
    if parsed.scheme not in ("http", "https") or not parsed.host:
        raise ValueError(f"Jobwire's URL is http(s)://host[:port], not {url!r}")
    return url.rstrip("/")


def http_options(base_url: str, api_key: str | None, timeout: float | httpx.Timeout,
                 headers: Mapping[str, str] | None) -> dict[str, Any]:
    """What both httpx clients are built with: redirects are not followed (an API answer is
    never a redirect; a proxy's login page must not be taken for one)."""
    sent = {"user-agent": USER_AGENT, "accept": "application/json, application/problem+json"}
    if api_key:
        sent["authorization"] = f"Bearer {api_key}"
    sent.update(headers or {})
    return {"base_url": base_url_of(base_url), "timeout": timeout, "headers": sent, "follow_redirects": False}


def stream_timeout(timeout: httpx.Timeout) -> httpx.Timeout:
    """The client's timeouts for a stream, but for reads: a stream is silent for up to 15 s (its
    keepalive), so a read waits at least STREAM_READ_SECONDS (a connection dead for that long is
    dropped, and the stream reconnects); None (no limit) stays None."""
    read = None if timeout.read is None else max(timeout.read, STREAM_READ_SECONDS)
    return httpx.Timeout(connect=timeout.connect, read=read, write=timeout.write, pool=timeout.pool)


class _Blocking:
    """Performs a program's steps with httpx.Client and time.sleep."""

    def __init__(self, http: httpx.Client, retries: Retries) -> None:
        self._http = http
        self._retries = retries

    def run(self, work: Work[T]) -> T:
        program, reply = start(work, self._retries), None
        while not isinstance(step := advance(program, reply), Done):
            reply = self._perform(step)
        return step.value

    def _perform(self, step: Send | Sleep) -> Any:
        if isinstance(step, Sleep):
            return time.sleep(step.seconds)
        try:
            if step.call.stream:
                return self._open(step.call)
            return self._http.request(**step.call.request_args())
        except httpx.TransportError as exc:
            return exc

    def _open(self, call: Call[Any]) -> httpx.Response:
        """A streamed answer, its body unread; a refusal is read whole and closed."""
        request = self._http.build_request(**call.request_args(), timeout=stream_timeout(self._http.timeout))
        response = self._http.send(request, stream=True)
        if response.status_code != 200:
            try:
                response.read()
            finally:
                response.close()
        return response

    def iterate(self, first: Call[Page[T]]) -> Iterator[T]:
        call: Call[Page[T]] | None = first
        while call is not None:
            page = self.run(call)
            yield from page.items
            call = following(call, page)


class _Asynchronous:
    """Performs a program's steps with httpx.AsyncClient and asyncio.sleep."""

    def __init__(self, http: httpx.AsyncClient, retries: Retries) -> None:
        self._http = http
        self._retries = retries

    async def run(self, work: Work[T]) -> T:
        program, reply = start(work, self._retries), None
        while not isinstance(step := advance(program, reply), Done):
            reply = await self._perform(step)
        return step.value

    async def _perform(self, step: Send | Sleep) -> Any:
        if isinstance(step, Sleep):
            return await asyncio.sleep(step.seconds)
        try:
            if step.call.stream:
                return await self._open(step.call)
            return await self._http.request(**step.call.request_args())
        except httpx.TransportError as exc:
            return exc

    async def _open(self, call: Call[Any]) -> httpx.Response:
        """A streamed answer, its body unread; a refusal is read whole and closed."""
        request = self._http.build_request(**call.request_args(), timeout=stream_timeout(self._http.timeout))
        response = await self._http.send(request, stream=True)
        if response.status_code != 200:
            try:
                await response.aread()
            finally:
                await response.aclose()
        return response

    async def iterate(self, first: Call[Page[T]]) -> AsyncIterator[T]:
        call: Call[Page[T]] | None = first
        while call is not None:
            page = await self.run(call)
            for item in page.items:
                yield item
            call = following(call, page)


class JobwireClient:
    """The Jobwire API, blocking, grouped by resource: `handlers`, `jobs`, `workflows`, `executions`,
    `events`, `subscriptions`, `schedules`, `queues`, `nodes`, `api_keys`. Use it as a context
    manager or call `close()`.

    `retries` bounds how often a request is tried again after a 503 or a failed connection
    (`Retries(attempts=1)` turns that off; which requests may be sent again at all is fixed per
    operation); `headers` are sent with every request. ValueError for a URL that is not
    http(s)://host[:port]."""

    def __init__(self, base_url: str, api_key: str | None = None, timeout: float | httpx.Timeout = 30.0, *,
                 retries: Retries | None = None, headers: Mapping[str, str] | None = None) -> None:
        self._http = httpx.Client(**http_options(base_url, api_key, timeout, headers))
        self._driver = _Blocking(self._http, retries or Retries())
        self.handlers = Handlers(self._driver)
        self.jobs = Jobs(self._driver)
        self.workflows = Workflows(self._driver)
        self.executions = Executions(self._driver)
        self.events = Events(self._driver)
        self.schedules = Schedules(self._driver)
        self.queues = Queues(self._driver)
        self.nodes = Nodes(self._driver)
        self.api_keys = ApiKeys(self._driver)
        self.subscriptions = Subscriptions(self._driver)

    def health(self) -> Health:
        """`/healthz`: the node answers."""
        return self._driver.run(probes.health())

    def readiness(self) -> Readiness:
        """`/readyz`: whether the node's database is reachable and migrated (`ready`, else `detail`)."""
        return self._driver.run(probes.readiness())

    def metrics(self) -> str:
        """`/metrics`: the node's Prometheus text exposition."""
        return self._driver.run(probes.metrics())

    def close(self) -> None:
        """Close the connections."""
        self._http.close()

    def __enter__(self) -> JobwireClient:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()


class AsyncJobwireClient:
    """The Jobwire API for asyncio: JobwireClient's resources and methods, each awaited (`list`,
    `logs`, `events`, `keys`, `deliveries`, `follow` and the workflows' `jobs` give async
    iterators). Use `async with` or `await close()`."""

    def __init__(self, base_url: str, api_key: str | None = None, timeout: float | httpx.Timeout = 30.0, *,
                 retries: Retries | None = None, headers: Mapping[str, str] | None = None) -> None:
        self._http = httpx.AsyncClient(**http_options(base_url, api_key, timeout, headers))
        self._driver = _Asynchronous(self._http, retries or Retries())
        self.handlers = AsyncHandlers(self._driver)
        self.jobs = AsyncJobs(self._driver)
        self.workflows = AsyncWorkflows(self._driver)
        self.executions = AsyncExecutions(self._driver)
        self.events = AsyncEvents(self._driver)
        self.schedules = AsyncSchedules(self._driver)
        self.queues = AsyncQueues(self._driver)
        self.nodes = AsyncNodes(self._driver)
        self.api_keys = AsyncApiKeys(self._driver)
        self.subscriptions = AsyncSubscriptions(self._driver)

    async def health(self) -> Health:
        """`/healthz`: the node answers."""
        return await self._driver.run(probes.health())

    async def readiness(self) -> Readiness:
        """`/readyz`: whether the node's database is reachable and migrated (`ready`, else `detail`)."""
        return await self._driver.run(probes.readiness())

    async def metrics(self) -> str:
        """`/metrics`: the node's Prometheus text exposition."""
        return await self._driver.run(probes.metrics())

    async def close(self) -> None:
        """Close the connections."""
        await self._http.aclose()

    aclose = close

    async def __aenter__(self) -> AsyncJobwireClient:
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.close()
