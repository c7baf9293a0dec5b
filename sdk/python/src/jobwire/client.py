"""`JobwireClient` and `AsyncJobwireClient`: two thin drivers over one protocol.

What a method sends, how often it is retried and how its answer is read is written once
(`_operations.py`, `_protocol.py`); a driver only performs the steps: an HTTP request on its
httpx client, or a pause. The two clients therefore behave the same, call for call.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Iterator, Mapping
from typing import Any

import httpx

from jobwire._operations import Operations
from jobwire._protocol import Call, Done, Page, Send, Sleep, advance, start
from jobwire._retry import Retries
from jobwire._version import __version__

USER_AGENT = f"jobwire-sdk/{__version__}"


def http_options(base_url: str, api_key: str | None, timeout: float | httpx.Timeout,
                 headers: Mapping[str, str] | None) -> dict[str, Any]:
    """What both httpx clients are built with: redirects are not followed (an API answer is
    never a redirect; a proxy's login page must not be taken for one)."""
    sent = {"user-agent": USER_AGENT, "accept": "application/json, application/problem+json"}
    if api_key:
        sent["authorization"] = f"Bearer {api_key}"
    sent.update(headers or {})
    return {"base_url": base_url.rstrip("/"), "timeout": timeout, "headers": sent, "follow_redirects": False}


class JobwireClient(Operations):
    """The Jobwire API, blocking. Use it as a context manager or call `close()`.

    `retries` bounds how often a 503 or a failed connection is tried again (`Retries(attempts=1)`
    turns that off); `headers` are sent with every request."""

    def __init__(self, base_url: str, api_key: str | None = None, timeout: float | httpx.Timeout = 30.0, *,
                 retries: Retries | None = None, headers: Mapping[str, str] | None = None) -> None:
        self._retries = retries or Retries()
        self._http = httpx.Client(**http_options(base_url, api_key, timeout, headers))

    def _run(self, work: Any) -> Any:
        program, reply = start(work, self._retries), None
        while not isinstance(step := advance(program, reply), Done):
            reply = self._perform(step)
        return step.value

    def _perform(self, step: Send | Sleep) -> Any:
        if isinstance(step, Sleep):
            return time.sleep(step.seconds)
        try:
            return self._http.request(**step.call.request_args())
        except httpx.TransportError as exc:
            return exc

    def _iterate(self, call: Call[Page[Any]] | None) -> Iterator[Any]:
        while call is not None:
            page = self._run(call)
            yield from page.items
            call = page.next

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> JobwireClient:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()


class AsyncJobwireClient(Operations):
    """The Jobwire API for asyncio: JobwireClient's methods, each awaited (`list`, `logs` and
    `events` give async iterators). Use `async with` or `await close()`."""

    def __init__(self, base_url: str, api_key: str | None = None, timeout: float | httpx.Timeout = 30.0, *,
                 retries: Retries | None = None, headers: Mapping[str, str] | None = None) -> None:
        self._retries = retries or Retries()
        self._http = httpx.AsyncClient(**http_options(base_url, api_key, timeout, headers))

    async def _run(self, work: Any) -> Any:
        program, reply = start(work, self._retries), None
        while not isinstance(step := advance(program, reply), Done):
            reply = await self._perform(step)
        return step.value

    async def _perform(self, step: Send | Sleep) -> Any:
        if isinstance(step, Sleep):
            return await asyncio.sleep(step.seconds)
        try:
            return await self._http.request(**step.call.request_args())
        except httpx.TransportError as exc:
            return exc

    async def _iterate(self, call: Call[Page[Any]] | None) -> AsyncIterator[Any]:
        while call is not None:
            page = await self._run(call)
            for item in page.items:
                yield item
            call = page.next

    async def close(self) -> None:
        await self._http.aclose()

    aclose = close

    async def __aenter__(self) -> AsyncJobwireClient:
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.close()
