"""The HTTP transport of handler calls: pooled keep-alive connections, one overall deadline
per call.

Two implementations behind one protocol, chosen by JOBWIRE_DISPATCH_CLIENT:
- Http11Transport (default): app.delivery.http11, a small HTTP/1.1 client on asyncio protocols
  and httptools, for http and https handlers alike: it spends a fraction of aiohttp's client
  CPU per call (`python -m bench.http_clients`; figures in bench/README.md).
- AiohttpTransport: one aiohttp ClientSession; the fallback, should a handler need what the
  small client does not do (a proxy, compressed replies).
Both verify https handlers against the system's CA store, or the `ssl_context` they are given
(tests inject a local CA's trust this way; no setting reads it).

Both connect only to addresses `networks` (JOBWIRE_HANDLER_NETWORKS) allows, judged after the
host is resolved by `resolver` (app/delivery/destinations.py; default the event loop's
getaddrinfo), at every new connection; a host with no allowed address raises BlockedDestination
before anything is sent. The built-in client resolves and connects by address itself; aiohttp
asks a resolver that drops refused addresses (aiohttp connects to what its resolver returns and
nothing else), its DNS cache off, and an IP literal, which aiohttp connects to without asking
its resolver, is judged here before the request.

Not httpx: it pegs the CPU under concurrency (encode/httpx#3215; bench/README.md has the figure).
"""

from __future__ import annotations

import asyncio
import socket
import ssl
from dataclasses import dataclass, field
from typing import Protocol

import aiohttp
from aiohttp.abc import AbstractResolver, ResolveResult
from aiohttp.helpers import is_ip_address
from yarl import URL

from app.domain.address_policy import ANY_NETWORK, NetworkPolicy
from app.domain.addresses import as_address
from app.delivery.destinations import (
    DestinationRefused,
    Resolver,
    allowed_addresses,
    refusal_text,
    system_resolver,
)
from app.delivery.http11 import Http11Client, HttpError


@dataclass(frozen=True, slots=True)
class Reply:
    status: int
    reason: str
    body: bytes
    too_large: bool = False
    headers: dict[str, str] = field(default_factory=dict)


class TransportError(Exception):
    """No reply: connection refused, reset, DNS, protocol error."""


class BlockedDestination(TransportError):
    """JOBWIRE_HANDLER_NETWORKS refuses every address of the handler's host: no connection was
    made, nothing was sent. Retrying cannot help until the handler or the setting changes."""


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
    def __init__(self, limit: int, max_response_bytes: int, ssl_context: ssl.SSLContext | None = None,
                 networks: NetworkPolicy = ANY_NETWORK, resolver: Resolver = system_resolver) -> None:
        """`ssl_context`: whom https handlers are verified against (None: the system's CA store);
        `networks`: the addresses it may connect to; `resolver`: host name → addresses."""
        self.client = Http11Client(limit, max_response_bytes, ssl_context=ssl_context, networks=networks,
                                   resolver=resolver)

    async def post(self, url: str, body: bytes, headers: dict[str, str], timeout: float | None) -> Reply:
        try:
            if timeout is None:  # the caller keeps the deadline (a dispatch: app/delivery/dispatch.py)
                r = await self.client.post(url, body, headers)
            else:  # one overall deadline covering connect, send and the whole response
                async with asyncio.timeout(_bounded(timeout)):
                    r = await self.client.post(url, body, headers)
        except TimeoutError as exc:
            raise DeadlineExceeded(f"no reply within {timeout:.3f}s") from exc
        except DestinationRefused as exc:
            raise BlockedDestination(str(exc)) from exc
        except HttpError as exc:
            raise TransportError(str(exc)) from exc
        return Reply(status=r.status, reason=r.reason, body=r.body, too_large=r.too_large, headers=r.headers)

    async def close(self) -> None:
        await self.client.close()


class _GuardedResolver(AbstractResolver):
    """aiohttp's resolver: the addresses of a host that the policy allows (aiohttp connects to
    these and no others); DestinationRefused when there is none."""

    def __init__(self, networks: NetworkPolicy, resolver: Resolver) -> None:
        self.networks = networks
        self.resolver = resolver

    async def resolve(self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
                      ) -> list[ResolveResult]:
        results: list[ResolveResult] = []
        for address in await allowed_addresses(host, port, self.networks, self.resolver):
            found = socket.AF_INET6 if ":" in address else socket.AF_INET
            if family in (socket.AF_UNSPEC, found):
                results.append(ResolveResult(hostname=host, host=address, port=port, family=found, proto=0,
                                             flags=socket.AI_NUMERICHOST | socket.AI_NUMERICSERV))
        if not results:
            raise OSError(f"{host} has no allowed address of the family asked for")
        return results

    async def close(self) -> None:
        pass


class AiohttpTransport:
    def __init__(self, limit: int, max_response_bytes: int, ssl_context: ssl.SSLContext | None = None,
                 networks: NetworkPolicy = ANY_NETWORK, resolver: Resolver = system_resolver) -> None:
        """`ssl_context`: whom https handlers are verified against (None: the system's CA store);
        `networks`: the addresses it may connect to; `resolver`: host name → addresses."""
        self.networks = networks
        # No DNS cache: each new connection asks the resolver again, so an answer that changed
        # is judged (pooled keep-alive connections were judged when they opened).
        connector = aiohttp.TCPConnector(limit=limit, limit_per_host=0, use_dns_cache=False,
                                         resolver=_GuardedResolver(networks, resolver),
                                         enable_cleanup_closed=True,
                                         ssl=ssl_context if ssl_context is not None else True)
        self.session = aiohttp.ClientSession(connector=connector, auto_decompress=True,
                                             skip_auto_headers=("User-Agent",))
        self.max_response_bytes = max_response_bytes

    async def post(self, url: str, body: bytes, headers: dict[str, str], timeout: float | None) -> Reply:
        try:
            # As stored: yarl would otherwise re-encode the URL, lower-case its host and resolve
            # its dot segments (`/a/%2e%2e/b` → `/b`).
            target = URL(url, encoded=True)
            self._judge_literal(target.raw_host)
            # One overall deadline covering connect, send and the whole response.
            async with asyncio.timeout(_bounded(timeout)):
                async with self.session.post(target, data=body, headers=headers, allow_redirects=False) as resp:
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
        except DestinationRefused as exc:
            raise BlockedDestination(str(exc)) from exc
        except (aiohttp.ClientError, OSError, ValueError) as exc:
            raise TransportError(f"{type(exc).__name__}: {exc}") from exc

    def _judge_literal(self, host: str | None) -> None:
        # aiohttp connects to a host it takes for an IP address (its own test, is_ip_address)
        # without asking the resolver: judge it here, the same way.
        if host and is_ip_address(host):
            if as_address(host) is None:
                raise DestinationRefused(f"blocked destination: handler host {host!r} is not a canonical IP "
                                         "address; nothing was sent")
            if not self.networks.allows(host):
                raise DestinationRefused(refusal_text(host, [host], self.networks))

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
