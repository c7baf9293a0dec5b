"""A small HTTP/1.1 client for the dispatch hot path: POST a body, read the reply, keep the
connection for the next call.

Why not aiohttp's ClientSession here: per call it builds a request object, header multidicts,
a timer context, tracing hooks and a response object; profiled on `python -m bench`, that was
the largest share of the dispatcher's CPU. A handler call needs none of it: one request line,
a handful of headers known in advance, and from the reply only the status, two headers and a
size-capped body. This client writes the request in one buffer and parses the reply with
httptools (llhttp, the parser uvicorn uses), on asyncio protocols with keep-alive pooling.

What it does: http and https (TLS with the certificate and host name verified, against the
system's CA store or the `ssl_context` given), the SSRF guard (below), one connection per call
in flight, idle connections kept per origin for `idle_timeout` seconds (at most `limit` in all;
dropped as soon as the server closes them or sends anything unasked), `Connection: close` and
HTTP/1.0 replies honoured, chunked (extensions ignored, trailers read and dropped) and length-delimited and
read-until-close bodies, the body cap (the connection is dropped when a reply exceeds it), a
cap on the head (MAX_HEAD_BYTES), interim 1xx replies skipped for the final one. What it does
not: redirects (never followed, as the dispatch protocol says), proxies, compression (no
Accept-Encoding is sent, so replies come uncompressed), HTTP/2. tests/runtime/test_http11_client.py
holds it to what a library would be held to: a local CA, peers that close early, trickle,
send huge heads or garbage.

The SSRF guard: the client resolves the host itself (through `resolver`, default the event loop's
getaddrinfo) and connects by address, only to one that `networks` (JOBWIRE_HANDLER_NETWORKS)
allows, in the resolver's order; when none is allowed it raises DestinationRefused before any
connection is made, so nothing reaches a refused address. TLS still verifies the URL's host name
(server_hostname). The check is made when a connection is opened, not per request: a pooled
keep-alive connection was judged when it opened, and nothing else is cached, so a DNS answer
that changes (rebinding) is judged at the next new connection.
"""

from __future__ import annotations

import asyncio
import ssl
import time
from collections import deque
from dataclasses import dataclass, field
from urllib.parse import urlsplit

import httptools

from app.domain.address_policy import ANY_NETWORK, NetworkPolicy
from app.delivery.destinations import Resolver, allowed_addresses, system_resolver


class HttpError(Exception):
    """No usable reply: connection refused or reset, a malformed reply, a bad URL."""


@dataclass(slots=True)
class Response:
    status: int
    reason: str
    headers: dict[str, str]
    body: bytes
    too_large: bool


@dataclass(frozen=True, slots=True)
class Origin:
    scheme: str
    host: str
    port: int

    @property
    def host_header(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        default = 443 if self.scheme == "https" else 80
        return host if self.port == default else f"{host}:{self.port}"


def split_url(url: str) -> tuple[Origin, str]:
    """(origin, request target) of an http(s) URL; the target as the URL writes it (an empty
    path is "/")."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise HttpError(f"invalid URL {url!r}: {exc}") from exc
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise HttpError(f"invalid URL {url!r}: only http:// and https:// with a host")
    target = parts.path or "/"
    if parts.query or "?" in url.partition("#")[0]:
        target += "?" + parts.query
    return Origin(parts.scheme, parts.hostname, port or (443 if parts.scheme == "https" else 80)), target


MAX_HEAD_BYTES = 64 * 1024
"""The most a reply's status line and headers (trailers included) may take, each interim reply
on its own; beyond it the call fails rather than buffer without bound. Common servers allow a
request head less: nginx 4 × 8 KiB (large_client_header_buffers), Node 16 KiB; aiohttp, the
other transport, reads at most 128 lines of 8 KiB."""


class _Stop(Exception):
    """Raised from a parser callback to stop parsing a reply that has already failed."""


_KEPT_HEADERS = (b"retry-after", b"date", b"connection", b"content-length", b"transfer-encoding")
_SHOWN_HEADERS = ("retry-after", "date")


class _Connection(asyncio.Protocol):
    """One keep-alive connection; one exchange at a time."""

    def __init__(self, max_body: int) -> None:
        self.max_body = max_body
        self.transport: asyncio.Transport | None = None
        self.closed = False
        self.idle_since = 0.0
        self._reply: asyncio.Future[Response] | None = None
        self._parser = httptools.HttpResponseParser(self)
        self._reset_reply()

    # -- asyncio.Protocol --------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        reply = self._reply
        if reply is None:  # nothing asked: the server may not speak first
            self._abort()
            return
        size = self._size
        try:
            self._parser.feed_data(data)
        except httptools.HttpParserUpgrade:
            self._fail(HttpError("the handler answered with a protocol upgrade"))
            return
        except httptools.HttpParserError as exc:
            self._fail(HttpError(f"malformed HTTP reply: {exc}"))
            return
        if self._size == size and not reply.done():
            # No body byte and no end: these bytes went to a status line, a header, chunk framing or
            # a trailer, which httptools buffers until its line ends. Bound them, read after read.
            self._unframed += len(data)
            if self._unframed > MAX_HEAD_BYTES:
                self._head_too_large()
        else:
            self._unframed = 0

    def eof_received(self) -> bool:
        self._end_of_stream()
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self._end_of_stream(exc)

    def _end_of_stream(self, exc: Exception | None = None) -> None:
        if self._reply is None or self._reply.done():
            return
        if self._status and self._until_close and not self._complete:
            # A body delimited by the end of the connection (no length, not chunked) ends here.
            self._complete = True
            self._finish()
            return
        reason = f"{type(exc).__name__}: {exc}" if exc else "the handler closed the connection"
        self._fail(HttpError(f"connection lost before a complete reply ({reason})"))

    # -- httptools callbacks -----------------------------------------------------------------

    def on_message_begin(self) -> None:
        if self._reply is None or self._reply.done():
            # A second reply to one request: what comes next on this connection cannot be
            # trusted to answer the next request, so it is not reused.
            self._abort()
            return
        self._started = True

    def on_status(self, status: bytes) -> None:
        self._reason += status
        self._head_size += len(status)

    def on_header(self, name: bytes, value: bytes) -> None:
        self._head_size += len(name) + len(value) + 4  # ": " and CRLF
        if self._head_size > MAX_HEAD_BYTES:  # headers and trailers together, however they were read
            self._head_too_large()
            raise _Stop
        key = name.lower()
        if key in _KEPT_HEADERS:
            self._headers[key.decode("latin-1")] = value.decode("latin-1")

    def on_headers_complete(self) -> None:
        self._status = self._parser.get_status_code()
        if 100 <= self._status < 200:  # an interim reply (100 Continue, 103 Early Hints): no body
            return
        length = self._headers.get("content-length")
        chunked = "chunked" in self._headers.get("transfer-encoding", "").lower()
        self._until_close = length is None and not chunked and self._status not in (204, 304)
        if length is not None and length.strip().isdigit() and int(length) > self.max_body:
            self._too_large = True
            self._finish()

    def on_body(self, body: bytes) -> None:
        if self._too_large:
            return
        self._size += len(body)
        if self._size > self.max_body:
            self._too_large = True
            self._chunks.clear()
            self._finish()
            return
        self._chunks.append(body)

    def on_message_complete(self) -> None:
        if 100 <= self._status < 200:  # the final reply follows on this connection
            self._reset_reply()
            return
        self._complete = True
        if not self._too_large:
            self._finish()

    # -- exchange ----------------------------------------------------------------------------

    async def exchange(self, request: bytes) -> Response:
        assert self.transport is not None and self._reply is None
        self._reset_reply()
        self._reply = asyncio.get_running_loop().create_future()
        self.transport.write(request)
        try:
            return await self._reply
        finally:
            self._reply = None

    @property
    def reusable(self) -> bool:
        return not self.closed and self.transport is not None and not self.transport.is_closing()

    def close(self) -> None:
        self.closed = True
        if self.transport is not None:
            self.transport.close()

    def _abort(self) -> None:
        self.closed = True
        if self.transport is not None:
            self.transport.abort()

    def _reset_reply(self) -> None:
        self._started = False
        self._complete = False
        self._status = 0
        self._reason = b""
        self._headers: dict[str, str] = {}
        self._chunks: list[bytes] = []
        self._size = 0
        self._too_large = False
        self._until_close = False
        self._head_size = 0
        self._unframed = 0

    def _finish(self) -> None:
        reply = self._reply
        if reply is None or reply.done():
            return
        keep = (self._complete and not self._too_large and self._parser.should_keep_alive()
                and self._headers.get("connection", "").lower() != "close")
        if not keep:
            self.close()
        reply.set_result(Response(
            status=self._status,
            reason=self._reason.decode("latin-1", "replace"),
            headers={k: v for k, v in self._headers.items() if k in _SHOWN_HEADERS},
            body=b"" if self._too_large else b"".join(self._chunks),
            too_large=self._too_large,
        ))

    def _head_too_large(self) -> None:
        self._fail(HttpError(f"the reply's head is over {MAX_HEAD_BYTES // 1024} KiB"))

    def _fail(self, exc: Exception) -> None:
        self._abort()
        if self._reply is not None and not self._reply.done():
            self._reply.set_exception(exc)


@dataclass
class _Pool:
    idle: deque[_Connection] = field(default_factory=deque)


class Http11Client:
    """POST over pooled keep-alive HTTP/1.1 connections. At most `limit` connections open;
    https verified against `ssl_context` (None: the system's CA store); new connections only to
    addresses `networks` allows, of those `resolver` gives (see the module's docstring)."""

    def __init__(self, limit: int, max_body: int, idle_timeout: float = 15.0,
                 ssl_context: ssl.SSLContext | None = None, networks: NetworkPolicy = ANY_NETWORK,
                 resolver: Resolver = system_resolver) -> None:
        self.max_body = max_body
        self.idle_timeout = idle_timeout
        self._slots = asyncio.Semaphore(limit)
        self._pools: dict[Origin, _Pool] = {}
        self._idle_limit = limit  # idle connections kept, all origins together
        self._idle = 0
        self._ssl = ssl_context
        self._closed = False
        self.networks = networks
        self.resolver = resolver

    async def post(self, url: str, body: bytes, headers: dict[str, str]) -> Response:
        """One POST and its reply. Raises HttpError when there is no usable reply,
        DestinationRefused (nothing sent) when JOBWIRE_HANDLER_NETWORKS refuses every address of
        the host; cancelling the call (a deadline) drops its connection."""
        origin, target = split_url(url)
        request = self._request(origin, target, body, headers)
        async with self._slots:
            conn = await self._connection(origin)
            try:
                response = await conn.exchange(request)
            except BaseException:
                conn.close()
                raise
            if conn.reusable and self._idle < self._idle_limit:
                conn.idle_since = time.monotonic()
                self._pools.setdefault(origin, _Pool()).idle.append(conn)
                self._idle += 1
            elif conn.reusable:
                conn.close()
            return response

    @staticmethod
    def _request(origin: Origin, target: str, body: bytes, headers: dict[str, str]) -> bytes:
        lines = [f"POST {target} HTTP/1.1", f"Host: {origin.host_header}", f"Content-Length: {len(body)}"]
        for name, value in headers.items():
            if "\r" in name or "\n" in name or "\r" in value or "\n" in value:
                raise HttpError(f"header {name!r} has a line break")
            lines.append(f"{name}: {value}")
        return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body

    async def _connection(self, origin: Origin) -> _Connection:
        pool = self._pools.get(origin)
        now = time.monotonic()
        while pool and pool.idle:
            conn = pool.idle.pop()  # the most recently used: the least likely to have timed out
            self._idle -= 1
            if conn.reusable and now - conn.idle_since < self.idle_timeout:
                return conn
            conn.close()
        if self._closed:
            raise HttpError("the client is closed")
        loop = asyncio.get_running_loop()
        tls = None
        if origin.scheme == "https":
            if self._ssl is None:
                self._ssl = ssl.create_default_context()
            tls = self._ssl
        try:
            addresses = await allowed_addresses(origin.host, origin.port, self.networks, self.resolver)
        except (OSError, UnicodeError, ValueError) as exc:
            raise HttpError(f"cannot resolve {origin.host}: {type(exc).__name__}: {exc}") from exc
        failure: Exception | None = None
        for address in addresses:
            # By address, never by name: what is connected to is what was judged. A numeric host
            # is not resolved again by create_connection.
            try:
                _, conn = await loop.create_connection(
                    lambda: _Connection(self.max_body), address, origin.port, ssl=tls,
                    server_hostname=origin.host if tls else None)
            except (OSError, ssl.SSLError, ValueError) as exc:
                failure = exc
                continue
            return conn
        assert failure is not None
        tried = "" if addresses == [origin.host] else f" (tried {origin.host} at {', '.join(addresses)})"
        raise HttpError(f"{type(failure).__name__}: {failure}{tried}") from failure

    async def close(self) -> None:
        self._closed = True
        for pool in self._pools.values():
            while pool.idle:
                pool.idle.pop().close()
        self._idle = 0
