"""The HTTP transport of handler calls: pooled keep-alive connections, one overall deadline
per call.

Two implementations behind one protocol, chosen by JOBWIRE_DISPATCH_CLIENT:
- Http11Transport (default): app.handlers.http11, a small HTTP/1.1 client on asyncio protocols
  and httptools, for http and https handlers alike. Measured here against the benchmark's no-op
  handler, 64 calls in flight: ~110–130 µs of client CPU per call against aiohttp's ~320–350 µs
  (`python -m bench.http_clients`).
- AiohttpTransport: one aiohttp ClientSession; the fallback, should a handler need what the
  small client does not do (a proxy, compressed replies).
Both verify https handlers against the system's CA store, or the `ssl_context` they are given
(tests inject a local CA's trust this way; no setting reads it).
Not httpx: ~580 POST/s per process here (httpx pegs the CPU; encode/httpx#3215).
"""

from __future__ import annotations

import asyncio
import ssl
from dataclasses import dataclass, field
from typing import Protocol

import aiohttp

from app.handlers.http11 import Http11Client, HttpError


@dataclass(frozen=True, slots=True)
class Reply:
    status: int
    reason: str
    body: bytes
    too_large: bool = False
    headers: dict[str, str] = field(default_factory=dict)


class TransportError(Exception):
    """No reply: connection refused, reset, DNS, protocol error."""


class DeadlineExceeded(Exception):
    """The call was still open when its deadline came."""


class Transport(Protocol):
    async def post(self, url: str, body: bytes, headers: dict[str, str], timeout: float | None) -> Reply:
        """POST and read the reply; `timeout` (None: none) covers connect, send and the whole reply."""
        ...

    async def close(self) -> None: ...


def _bounded(timeout: float | None) -> float | None:
    return None if timeout is None else max(timeout, 0.001)


class Http11Transport:
    def __init__(self, limit: int, max_response_bytes: int, ssl_context: ssl.SSLContext | None = None) -> None:
        """`ssl_context`: whom https handlers are verified against (None: the system's CA store)."""
        self.client = Http11Client(limit, max_response_bytes, ssl_context=ssl_context)

    async def post(self, url: str, body: bytes, headers: dict[str, str], timeout: float | None) -> Reply:
        try:
            # One overall deadline covering connect, send and the whole response.
            async with asyncio.timeout(_bounded(timeout)):
                r = await self.client.post(url, body, headers)
        except TimeoutError as exc:
            raise DeadlineExceeded(f"no reply within {timeout:.3f}s") from exc
        except HttpError as exc:
            raise TransportError(str(exc)) from exc
        return Reply(status=r.status, reason=r.reason, body=r.body, too_large=r.too_large, headers=r.headers)

    async def close(self) -> None:
        await self.client.close()


class AiohttpTransport:
    def __init__(self, limit: int, max_response_bytes: int, ssl_context: ssl.SSLContext | None = None) -> None:
        """`ssl_context`: whom https handlers are verified against (None: the system's CA store)."""
        connector = aiohttp.TCPConnector(limit=limit, limit_per_host=0, ttl_dns_cache=60,
                                         enable_cleanup_closed=True,
                                         ssl=ssl_context if ssl_context is not None else True)
        self.session = aiohttp.ClientSession(connector=connector, auto_decompress=True,
                                             skip_auto_headers=("User-Agent",))
        self.max_response_bytes = max_response_bytes

    async def post(self, url: str, body: bytes, headers: dict[str, str], timeout: float | None) -> Reply:
        try:
            # One overall deadline covering connect, send and the whole response.
            async with asyncio.timeout(_bounded(timeout)):
                async with self.session.post(url, data=body, headers=headers, allow_redirects=False) as resp:
                    data, too_large = await self._read_capped(resp)
                    return Reply(
                        status=resp.status,
                        reason=resp.reason or "",
                        body=data,
                        too_large=too_large,
                        headers={k: v for k, v in resp.headers.items() if k.lower() in ("retry-after", "date")},
                    )
        except TimeoutError as exc:
            raise DeadlineExceeded(f"no reply within {timeout:.3f}s") from exc
        except (aiohttp.ClientError, OSError, ValueError) as exc:
            raise TransportError(f"{type(exc).__name__}: {exc}") from exc

    async def close(self) -> None:
        await self.session.close()

    async def _read_capped(self, resp: aiohttp.ClientResponse) -> tuple[bytes, bool]:
        limit = self.max_response_bytes
        if resp.content_length is not None and resp.content_length > limit:
            return b"", True
        chunks, size = [], 0
        async for chunk in resp.content.iter_chunked(65536):
            size += len(chunk)
            if size > limit:
                return b"", True
            chunks.append(chunk)
        return b"".join(chunks), False
