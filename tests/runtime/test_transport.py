"""Both handler-call transports against a scripted HTTP server on loopback: keep-alive reuse,
every way a reply body can be delimited, the size cap, replies cut short or malformed, and the
deadline. test_http11_client.py adds the peers a library must survive (TLS, trickling, huge heads,
early closes, garbage); the dispatch tests (test_dispatch.py) cover the rest through the real dispatcher."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable

import pytest

from app.delivery.transport import AiohttpTransport, DeadlineExceeded, Http11Transport, Transport, TransportError

CAP = 1000


class ScriptedServer:
    """Answers each request on a connection with the next reply `script` gives for it; counts
    connections and requests. A reply of None closes the connection without answering."""

    def __init__(self, script: Callable[[int], bytes | None]) -> None:
        self.script = script
        self.connections = 0
        self.requests: list[bytes] = []
        self.server: asyncio.base_events.Server | None = None

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = 0
                for line in head.split(b"\r\n"):
                    if line.lower().startswith(b"content-length:"):
                        length = int(line.split(b":", 1)[1])
                body = await reader.readexactly(length)
                self.requests.append(head + body)
                reply = self.script(len(self.requests))
                if reply is None:
                    break
                writer.write(reply)
                await writer.drain()
                if b"connection: close" in reply.lower() or reply.startswith(b"HTTP/1.0"):
                    break
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    @property
    def url(self) -> str:
        assert self.server is not None
        port = self.server.sockets[0].getsockname()[1]
        return f"http://127.0.0.1:{port}/hook?x=1"


def ok(body: bytes = b'{"result": 1}', extra: bytes = b"") -> bytes:
    return b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n%s\r\n%s" % (len(body), extra, body)


@pytest.fixture(params=["http11", "aiohttp"])
async def transport(request: pytest.FixtureRequest) -> AsyncIterator[Transport]:
    t: Transport = Http11Transport(8, CAP) if request.param == "http11" else AiohttpTransport(8, CAP)
    yield t
    await t.close()


_open: list[asyncio.base_events.Server] = []
_writers: list[asyncio.StreamWriter] = []


@pytest.fixture(autouse=True)
async def _close_servers() -> AsyncIterator[None]:
    yield
    while _open:
        s = _open.pop()
        s.close()
        await s.wait_closed()
    while _writers:
        _writers.pop().close()
    await asyncio.sleep(0)


async def listen(server: ScriptedServer, handle: Callable | None = None) -> ScriptedServer:
    serve = handle or server._serve

    async def tracked(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        _writers.append(writer)
        await serve(reader, writer)

    server.server = await asyncio.start_server(tracked, "127.0.0.1", 0)
    _open.append(server.server)
    return server


async def serving(script: Callable[[int], bytes | None]) -> ScriptedServer:
    return await listen(ScriptedServer(script))


async def post(t: Transport, server: ScriptedServer, timeout: float = 5.0, body: bytes = b'{"a": 1}'):
    return await t.post(server.url, body, {"content-type": "application/json", "webhook-id": "m.0"}, timeout)


async def test_calls_reuse_one_keep_alive_connection_and_send_the_request_as_given(transport):
    server = await serving(lambda n: ok())
    for _ in range(3):
        reply = await post(transport, server)
        assert (reply.status, reply.body, reply.too_large) == (200, b'{"result": 1}', False)
    assert server.connections == 1
    first = server.requests[0]
    assert first.startswith(b"POST /hook?x=1 HTTP/1.1\r\n")
    assert b"\r\nwebhook-id: m.0\r\n" in first.lower() or b"\r\nWebhook-Id: m.0\r\n" in first
    assert first.endswith(b'\r\n\r\n{"a": 1}')


async def test_a_chunked_reply_is_read_whole(transport):
    server = await serving(lambda n: b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
                                     b"5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n")
    for _ in range(2):
        assert (await post(transport, server)).body == b"hello world"
    assert server.connections == 1


async def test_a_reply_delimited_by_closing_the_connection_is_read_whole(transport):
    server = await serving(lambda n: b"HTTP/1.0 200 OK\r\n\r\nuntil the end")
    assert (await post(transport, server)).body == b"until the end"
    assert (await post(transport, server)).body == b"until the end"
    assert server.connections == 2


async def test_connection_close_is_honoured_and_the_next_call_opens_a_new_one(transport):
    server = await serving(lambda n: ok(extra=b"Connection: close\r\n"))
    for _ in range(2):
        assert (await post(transport, server)).status == 200
    assert server.connections == 2


async def test_a_connection_the_server_closed_while_idle_is_not_reused(transport):
    server = await serving(lambda n: ok() if n % 2 else None)  # every 2nd request: closed unanswered
    assert (await post(transport, server)).status == 200
    with pytest.raises(TransportError):
        await post(transport, server)  # the server drops it: no reply
    assert (await post(transport, server)).status == 200  # a fresh connection
    assert server.connections == 2


async def test_a_connection_that_answered_twice_to_one_request_is_not_reused(transport):
    server = await serving(lambda n: ok() + ok(b"unasked") if n == 1 else ok(b"second"))
    assert (await post(transport, server)).body == b'{"result": 1}'
    await asyncio.sleep(0.05)
    assert (await post(transport, server)).body == b"second"
    if isinstance(transport, Http11Transport):
        assert server.connections == 2


async def test_interim_1xx_replies_are_skipped_and_the_final_reply_is_the_answer(transport):
    # 100 Continue and 103 Early Hints come before the final reply (RFC 9110 §15.2).
    server = await serving(lambda n: b"HTTP/1.1 100 Continue\r\n\r\n"
                                     b"HTTP/1.1 103 Early Hints\r\nLink: </s.css>; rel=preload\r\n\r\n"
                                     + ok(b"final %d" % n))
    for n in (1, 2):
        reply = await post(transport, server)
        assert (reply.status, reply.body) == (200, b"final %d" % n)
    if isinstance(transport, Http11Transport):
        assert server.connections == 1


async def test_status_reason_and_the_retry_headers_are_reported(transport):
    server = await serving(lambda n: b"HTTP/1.1 429 Slow Down\r\nRetry-After: 7\r\n"
                                     b"Date: Mon, 30 Nov 2026 00:00:00 GMT\r\nX-Other: 1\r\n"
                                     b"Content-Length: 4\r\n\r\nbusy")
    reply = await post(transport, server)
    assert (reply.status, reply.reason, reply.body) == (429, "Slow Down", b"busy")
    headers = {k.lower(): v for k, v in reply.headers.items()}
    assert headers == {"retry-after": "7", "date": "Mon, 30 Nov 2026 00:00:00 GMT"}


@pytest.mark.parametrize("reply", [
    ok(b"x" * (CAP + 1)),
    b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + b"%x\r\n%s\r\n0\r\n\r\n" % (CAP + 1, b"y" * (CAP + 1)),
], ids=["content-length", "chunked"])
async def test_a_reply_over_the_cap_is_too_large_and_the_next_call_is_whole(transport, reply):
    server = await serving(lambda n: reply if n == 1 else ok())
    first = await post(transport, server)
    assert (first.status, first.too_large, first.body) == (200, True, b"")
    assert (await post(transport, server)).body == b'{"result": 1}'
    if isinstance(transport, Http11Transport):
        assert server.connections == 2  # the rest of the big reply is not read: its connection goes


async def test_a_reply_at_the_cap_is_whole(transport):
    server = await serving(lambda n: ok(b"z" * CAP))
    reply = await post(transport, server)
    assert (reply.too_large, len(reply.body)) == (False, CAP)


async def test_a_reply_cut_short_is_a_transport_error(transport):
    server = await serving(lambda n: b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nonly this")

    async def cut(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(server.script(1) or b"")
        await writer.drain()
        writer.close()

    await listen(server, cut)
    with pytest.raises(TransportError):
        await post(transport, server)


async def test_a_malformed_reply_is_a_transport_error(transport):
    server = await serving(lambda n: b"SMTP ready\r\n\r\n")
    with pytest.raises(TransportError):
        await post(transport, server)


async def test_no_listener_is_a_transport_error(transport):
    server = await serving(lambda n: ok())
    url = server.url
    _open.remove(server.server)  # type: ignore[arg-type]
    server.server.close()  # type: ignore[union-attr]
    await server.server.wait_closed()  # type: ignore[union-attr]
    with pytest.raises(TransportError):
        await transport.post(url, b"{}", {}, 5.0)


async def test_a_reply_later_than_the_deadline_is_deadline_exceeded_and_the_connection_is_not_reused(transport):
    release = asyncio.Event()

    async def slow(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        server.connections += 1
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                await reader.readexactly(int(head.lower().split(b"content-length: ")[1].split(b"\r\n")[0]))
                if server.connections == 1:
                    await release.wait()
                writer.write(ok())
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    server = await listen(ScriptedServer(lambda n: None), slow)
    with pytest.raises(DeadlineExceeded):
        await post(transport, server, timeout=0.2)
    release.set()
    assert (await post(transport, server)).body == b'{"result": 1}'  # not the late reply of the first call
    assert server.connections == 2
