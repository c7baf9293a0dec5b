"""The handler-call transports against peers a library must survive, each a real server on
loopback: TLS with a local CA (the test injects the trust), peers that close early, trickle or
send garbage, huge heads, interim 1xx replies, every way a connection ends or is kept.
test_transport.py holds the ordinary exchanges; both files run each case through both
transports where they behave alike, and through the built-in client alone where it is its
own (its head cap)."""

from __future__ import annotations

import asyncio
import ssl
import time
from collections.abc import AsyncIterator, Awaitable, Callable

import pytest
import trustme

from app.delivery.http11 import MAX_HEAD_BYTES
from app.delivery.transport import (AiohttpTransport, DeadlineExceeded, Http11Transport, Reply, Transport,
                                    TransportError)

CAP = 1000
BODY = b'{"secret": "s3cr3t-payload"}'

Respond = Callable[[int, asyncio.StreamWriter], Awaitable[bool]]
"""Answers request number n (1-based, over the peer's life) on `writer`; False closes the connection."""


def ok(body: bytes = b'{"result": 1}', extra: bytes = b"", version: bytes = b"1.1") -> bytes:
    return b"HTTP/%s 200 OK\r\nContent-Length: %d\r\n%s\r\n%s" % (version, len(body), extra, body)


def sending(reply: Callable[[int], bytes] | bytes, *, keep: bool = True, pause: float = 0.0,
            pieces: int = 1) -> Respond:
    """Write the reply (in `pieces` writes, `pause` seconds apart), then keep the connection or close it."""
    async def respond(n: int, writer: asyncio.StreamWriter) -> bool:
        data = reply(n) if callable(reply) else reply
        step = max(1, -(-len(data) // pieces))
        for i in range(0, len(data), step):
            writer.write(data[i:i + step])
            await writer.drain()
            if pause and i + step < len(data):
                await asyncio.sleep(pause)
        return keep

    return respond


def trickling(data: bytes, every: float = 0.05) -> Respond:
    return sending(data, pieces=len(data), pause=every)


class Peer:
    """A raw TCP (optionally TLS) server on 127.0.0.1: reads each request whole, lets `respond`
    answer it, counts connections and keeps the requests it read."""

    def __init__(self, respond: Respond, tls: ssl.SSLContext | None = None) -> None:
        self.respond = respond
        self.tls = tls
        self.connections = 0
        self.requests: list[bytes] = []
        self.server: asyncio.base_events.Server | None = None
        self.writers: list[asyncio.StreamWriter] = []

    async def start(self) -> Peer:
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0, ssl=self.tls)
        return self

    @property
    def port(self) -> int:
        assert self.server is not None
        return self.server.sockets[0].getsockname()[1]

    def url(self, port: int | None = None) -> str:
        return f"{'https' if self.tls else 'http'}://127.0.0.1:{port or self.port}/hook"

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        self.writers.append(writer)
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = next((int(line.split(b":", 1)[1]) for line in head.split(b"\r\n")
                               if line.lower().startswith(b"content-length:")), 0)
                self.requests.append(head + await reader.readexactly(length))
                if not await self.respond(len(self.requests), writer):
                    break
        except (asyncio.IncompleteReadError, ConnectionError, ssl.SSLError):
            pass
        finally:
            writer.close()

    async def stop(self) -> None:
        for writer in self.writers:
            writer.close()
        if self.server is not None:
            self.server.close()
            await self.server.wait_closed()


class Relay:
    """A TCP relay in front of a peer that keeps every byte the client sent: what went on the wire."""

    def __init__(self, target_port: int) -> None:
        self.target_port = target_port
        self.wire = bytearray()
        self.server: asyncio.base_events.Server | None = None
        self.writers: list[asyncio.StreamWriter] = []

    async def start(self) -> Relay:
        self.server = await asyncio.start_server(self._relay, "127.0.0.1", 0)
        return self

    @property
    def port(self) -> int:
        assert self.server is not None
        return self.server.sockets[0].getsockname()[1]

    async def _relay(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.target_port)
        self.writers += [writer, up_writer]

        async def pipe(src: asyncio.StreamReader, dst: asyncio.StreamWriter, record: bool) -> None:
            try:
                while data := await src.read(65536):
                    if record:
                        self.wire += data
                    dst.write(data)
                    await dst.drain()
            except ConnectionError:
                pass
            finally:
                dst.close()

        await asyncio.gather(pipe(reader, up_writer, True), pipe(up_reader, writer, False))

    async def stop(self) -> None:
        for writer in self.writers:
            writer.close()
        if self.server is not None:
            self.server.close()
            await self.server.wait_closed()


@pytest.fixture
async def servers() -> AsyncIterator[Callable[..., Awaitable[Peer]]]:
    started: list[Peer] = []

    async def start(respond: Respond, tls: ssl.SSLContext | None = None) -> Peer:
        peer = await Peer(respond, tls).start()
        started.append(peer)
        return peer

    yield start
    for server in started:
        await server.stop()
    await asyncio.sleep(0)


@pytest.fixture(params=["http11", "aiohttp"])
async def make_transport(request: pytest.FixtureRequest) -> AsyncIterator[Callable[..., Transport]]:
    made: list[Transport] = []

    def make(ssl_context: ssl.SSLContext | None = None) -> Transport:
        cls = Http11Transport if request.param == "http11" else AiohttpTransport
        made.append(cls(8, CAP, ssl_context=ssl_context))
        return made[-1]

    yield make
    for t in made:
        await t.close()


@pytest.fixture
async def transport(make_transport: Callable[..., Transport]) -> Transport:
    return make_transport()


@pytest.fixture
async def http11() -> AsyncIterator[Transport]:
    t = Http11Transport(8, CAP)
    yield t
    await t.close()


async def post(t: Transport, url: str, timeout: float = 10.0) -> Reply:
    return await t.post(url, BODY, {"content-type": "application/json", "webhook-id": "m.0"}, timeout)


# -- TLS ---------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def ca() -> trustme.CA:
    return trustme.CA()


def server_context(ca: trustme.CA, *hosts: str) -> ssl.SSLContext:
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert(*hosts).configure_cert(ctx)
    return ctx


@pytest.fixture(scope="module")
def tls(ca: trustme.CA) -> ssl.SSLContext:
    return server_context(ca, "127.0.0.1", "localhost")


@pytest.fixture(scope="module")
def trust(ca: trustme.CA) -> ssl.SSLContext:
    ctx = ssl.create_default_context()
    ca.configure_trust(ctx)
    return ctx


async def test_a_post_over_tls_succeeds_with_the_injected_trust_and_is_encrypted_on_the_wire(
        make_transport, servers, tls, trust):
    peer = await servers(sending(ok()), tls)
    relay = await Relay(peer.port).start()
    try:
        reply = await post(make_transport(trust), peer.url(relay.port))
    finally:
        await relay.stop()
    assert (reply.status, reply.body) == (200, b'{"result": 1}')
    assert peer.requests[0].startswith(b"POST /hook HTTP/1.1\r\n") and peer.requests[0].endswith(BODY)
    assert relay.wire.startswith(b"\x16\x03")  # a TLS handshake record
    assert b"POST" not in relay.wire and b"s3cr3t" not in relay.wire


async def test_without_the_injected_trust_the_certificate_is_refused_and_nothing_is_sent_in_clear(
        make_transport, servers, tls):
    peer = await servers(sending(ok()), tls)
    relay = await Relay(peer.port).start()
    try:
        with pytest.raises(TransportError, match="(?i)certificate verify failed"):
            await post(make_transport(), peer.url(relay.port))  # the system CA store: the local CA is not in it
    finally:
        await relay.stop()
    assert peer.requests == []
    assert relay.wire.startswith(b"\x16\x03")
    assert b"POST" not in relay.wire and b"s3cr3t" not in relay.wire


async def test_a_certificate_for_another_host_is_refused_even_from_a_trusted_ca(make_transport, servers, ca, trust):
    peer = await servers(sending(ok()), server_context(ca, "handler.example"))
    with pytest.raises(TransportError, match="(?i)certificate verify failed"):
        await post(make_transport(trust), peer.url())
    assert peer.requests == []


async def test_calls_over_tls_reuse_one_connection(make_transport, servers, tls, trust):
    peer = await servers(sending(lambda n: ok(b"call %d" % n)), tls)
    t = make_transport(trust)
    for n in (1, 2, 3):
        assert (await post(t, peer.url())).body == b"call %d" % n
    assert peer.connections == 1


@pytest.mark.parametrize("big", [
    ok(b"x" * (CAP + 1)),
    b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n%x\r\n%s\r\n0\r\n\r\n" % (CAP + 1, b"y" * (CAP + 1)),
], ids=["content-length", "chunked"])
async def test_the_body_cap_holds_over_tls_and_the_next_call_is_whole(make_transport, servers, tls, trust, big):
    peer = await servers(sending(lambda n: big if n == 1 else ok()), tls)
    t = make_transport(trust)
    first = await post(t, peer.url())
    assert (first.status, first.too_large, first.body) == (200, True, b"")
    assert (await post(t, peer.url())).body == b'{"result": 1}'


async def test_a_body_read_until_close_over_tls_is_read_whole(make_transport, servers, tls, trust):
    peer = await servers(sending(b"HTTP/1.1 200 OK\r\n\r\n" + b"e" * 600, keep=False, pieces=3, pause=0.02), tls)
    assert (await post(make_transport(trust), peer.url())).body == b"e" * 600


# -- peers that close early ----------------------------------------------------------------------

@pytest.mark.parametrize("cut", [
    b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n" + b"h" * 50,
    b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n64\r\n" + b"h" * 50,
    b"HTTP/1.1 200 OK\r\nContent-Len",
], ids=["half-the-content-length", "half-a-chunk", "half-the-head"])
async def test_a_peer_that_closes_mid_reply_is_a_transport_error_and_its_connection_is_not_reused(
        transport, servers, cut):
    peer = await servers(lambda n, w: sending(cut if n == 2 else ok(), keep=n != 2)(n, w))
    assert (await post(transport, peer.url())).status == 200
    with pytest.raises(TransportError):
        await post(transport, peer.url())  # on the pooled connection
    assert (await post(transport, peer.url())).body == b'{"result": 1}'
    assert peer.connections == 2


async def test_a_peer_that_closes_before_any_reply_is_a_transport_error(transport, servers):
    peer = await servers(sending(b"", keep=False))
    with pytest.raises(TransportError):
        await post(transport, peer.url())


async def test_a_peer_that_closes_on_accept_is_a_transport_error(transport, servers):
    async def hang_up(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.close()

    server = await asyncio.start_server(hang_up, "127.0.0.1", 0)
    try:
        with pytest.raises(TransportError):
            await post(transport, f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}/hook")
    finally:
        server.close()
        await server.wait_closed()


# -- slow peers ----------------------------------------------------------------------------------

async def test_a_reply_trickled_a_byte_every_50ms_completes_within_its_deadline(transport, servers):
    peer = await servers(trickling(ok(b"ok", extra=b"Retry-After: 3\r\n")))  # ~60 bytes: ~3 s
    reply = await post(transport, peer.url(), timeout=60.0)
    assert (reply.status, reply.body) == (200, b"ok")
    assert {k.lower(): v for k, v in reply.headers.items()} == {"retry-after": "3"}


@pytest.mark.parametrize("slow", [ok(b"t" * 200), b"HTTP/1.1 200 OK\r\n" + b"X-Slow: 1\r\n" * 20],
                         ids=["slow-body", "slow-head"])
async def test_a_trickle_longer_than_the_deadline_is_cut_off_and_its_connection_dropped(transport, servers, slow):
    peer = await servers(lambda n, w: (trickling(slow) if n == 1 else sending(ok()))(n, w))  # the first: >10 s
    started = time.monotonic()
    with pytest.raises(DeadlineExceeded):
        await post(transport, peer.url(), timeout=1.0)
    assert time.monotonic() - started < 8.0
    assert (await post(transport, peer.url())).body == b'{"result": 1}'
    assert peer.connections == 2


# -- huge heads ----------------------------------------------------------------------------------

def with_headers(*lines: bytes) -> bytes:
    return b"HTTP/1.1 200 OK\r\n" + b"".join(line + b"\r\n" for line in lines) + b"Content-Length: 2\r\n\r\nok"


async def test_a_reply_with_48_kb_of_headers_is_read(transport, servers):
    peer = await servers(sending(with_headers(*(b"X-Pad-%d: %s" % (i, b"p" * 8000) for i in range(6)),
                                              b"Retry-After: 5"), pieces=7))
    reply = await post(transport, peer.url())
    assert (reply.status, reply.body) == (200, b"ok")
    assert {k.lower(): v for k, v in reply.headers.items()} == {"retry-after": "5"}


@pytest.mark.parametrize("head", [
    with_headers(*(b"X-Pad-%d: %s" % (i, b"p" * 5000) for i in range(200))),
    with_headers(b"X-Huge: " + b"h" * 100_000),
], ids=["1-mb-of-headers", "one-100-kb-header-line"])
async def test_a_reply_head_far_over_the_cap_is_a_transport_error(transport, servers, head):
    peer = await servers(sending(head, pieces=16))
    with pytest.raises(TransportError):
        await post(transport, peer.url(), timeout=30.0)


@pytest.mark.parametrize("endless", [
    b"HTTP/1.1 200 OK\r\nX-Endless: ",
    b"HTTP/1.1 200 Reason",
    b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\nX-Trailer: ",
], ids=["header-line", "reason-phrase", "trailer-line"])
async def test_a_line_that_never_ends_fails_once_past_the_cap_not_at_the_deadline(http11, servers, endless):
    async def endless_line(n: int, writer: asyncio.StreamWriter) -> bool:
        writer.write(endless)
        for _ in range(2 * MAX_HEAD_BYTES // 4096 + 10):  # far past the cap, a read at a time, never ended
            writer.write(b"a" * 4096)
            await writer.drain()
            await asyncio.sleep(0.001)
        await writer.wait_closed()  # until the client gives up on it
        return False

    peer = await servers(endless_line)
    started = time.monotonic()
    with pytest.raises(TransportError, match="over"):
        await post(http11, peer.url(), timeout=30.0)
    assert time.monotonic() - started < 20.0


@pytest.mark.parametrize(("size", "fits"), [(MAX_HEAD_BYTES - 8192, True), (MAX_HEAD_BYTES + 8192, False)],
                         ids=["under-the-cap", "over-the-cap"])
@pytest.mark.parametrize("shape", ["one-line", "many-lines", "trailers"])
async def test_the_head_cap_of_the_built_in_client_on_both_sides(http11, servers, size, fits, shape):
    if shape == "one-line":
        reply = with_headers(b"X-Big: " + b"b" * size)
    elif shape == "many-lines":
        reply = with_headers(*(b"X-Pad-%d: %s" % (i, b"p" * 1000) for i in range(size // 1000)))
    else:  # headers and trailers together
        trailers = b"".join(b"X-T-%d: %s\r\n" % (i, b"t" * 1000) for i in range(size // 1000))
        reply = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n" + trailers + b"\r\n"
    for pieces in (1, 9):  # in one write, and spread over several reads
        peer = await servers(sending(reply, pieces=pieces))
        if fits:
            assert (await post(http11, peer.url())).body == b"ok"
        else:
            with pytest.raises(TransportError, match="over"):
                await post(http11, peer.url())


# -- interim replies -----------------------------------------------------------------------------

async def test_several_interim_replies_in_separate_writes_come_before_the_final_answer(transport, servers):
    interim = (b"HTTP/1.1 100 Continue\r\n\r\n", b"HTTP/1.1 100 Continue\r\n\r\n",
               b"HTTP/1.1 103 Early Hints\r\nLink: </a.css>; rel=preload\r\n\r\n",
               b"HTTP/1.1 103 Early Hints\r\nLink: </b.js>; rel=preload\r\nRetry-After: 99\r\n\r\n")

    async def respond(n: int, writer: asyncio.StreamWriter) -> bool:
        for part in (*interim, b"HTTP/1.1 201 Created\r\nContent-Length: 7\r\n\r\n", b"final %d" % n):
            writer.write(part)
            await writer.drain()
            await asyncio.sleep(0.02)
        return True

    peer = await servers(respond)
    for n in (1, 2):
        reply = await post(transport, peer.url())
        assert (reply.status, reply.reason, reply.body, reply.headers) == (201, "Created", b"final %d" % n, {})
    assert peer.connections == 1


# -- the end of a connection ---------------------------------------------------------------------

async def test_connection_close_is_honoured_even_when_the_server_leaves_the_connection_open(transport, servers):
    peer = await servers(sending(ok(extra=b"Connection: close\r\n"), keep=True))
    for _ in range(3):
        assert (await post(transport, peer.url())).status == 200
    assert peer.connections == 3


async def test_an_http_1_0_reply_without_keep_alive_is_not_reused_even_when_the_server_keeps_it(transport, servers):
    peer = await servers(sending(ok(version=b"1.0"), keep=True))  # until-close 1.0 bodies: test_transport.py
    for _ in range(2):
        assert (await post(transport, peer.url())).body == b'{"result": 1}'
    assert peer.connections == 2


async def test_an_http_1_1_body_read_until_close_is_read_whole_over_several_reads(transport, servers):
    peer = await servers(sending(b"HTTP/1.1 200 OK\r\nRetry-After: 1\r\n\r\n" + b"u" * 900, keep=False,
                                 pieces=5, pause=0.02))
    for _ in range(2):
        reply = await post(transport, peer.url())
        assert (reply.status, reply.body) == (200, b"u" * 900)
    assert peer.connections == 2


@pytest.mark.parametrize("pieces", [1, 13], ids=["one-write", "split-anywhere"])
async def test_a_chunked_reply_with_extensions_and_trailers_is_read_whole_and_the_connection_kept(
        transport, servers, pieces):
    reply = (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTrailer: X-Checksum\r\n\r\n"
             b"5;name=value\r\nhello\r\n6;a;b=\"quoted\"\r\n world\r\n0;last\r\n"
             b"X-Checksum: abc\r\nX-Other: 1\r\n\r\n")
    peer = await servers(sending(reply, pieces=pieces, pause=0.01))
    for _ in range(2):
        assert (await post(transport, peer.url())).body == b"hello world"
    assert peer.connections == 1


@pytest.mark.parametrize("garbage", [
    b"HTTP/1.1 2x0 OK\r\nContent-Length: 0\r\n\r\n",
    b"HTTP/1.1 OK\r\nContent-Length: 0\r\n\r\n",
    b"\x16\x03\x01\x00\x2a\x02\x00\x00\x26\x03\x03",  # a TLS record where HTTP was expected
    b"HTTP/1.1 200 OK\r\nno colon here\r\n\r\n",
    b"HTTP/1.1 200 OK\r\nContent-Length: ten\r\n\r\n",
    b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\nok",
    b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
], ids=["status-not-a-number", "no-status-code", "binary", "header-without-colon", "length-not-a-number",
        "length-and-chunked", "chunk-size-not-hex"])
async def test_garbage_on_a_kept_connection_is_a_transport_error_at_once(transport, servers, garbage):
    peer = await servers(lambda n, w: sending(garbage if n == 2 else ok())(n, w))  # and the peer keeps it open
    assert (await post(transport, peer.url())).status == 200
    started = time.monotonic()
    with pytest.raises(TransportError):
        await post(transport, peer.url(), timeout=30.0)
    assert time.monotonic() - started < 20.0
    assert (await post(transport, peer.url())).body == b'{"result": 1}'
    assert peer.connections == 2

