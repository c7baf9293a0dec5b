"""The SSRF guard (JOBWIRE_HANDLER_NETWORKS) where it counts: on the address each dispatch client
actually connects to, after resolution, at every new connection. Real servers on 127.0.0.x that
count their connections; host names come from an injected resolver (CI has no other network).
Both clients, through the transports and through a running Jobwire."""

from __future__ import annotations

import asyncio
import functools
import socket
import ssl
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import httpx
import pytest
import trustme
from aiohttp import web

from app.domain.address_policy import parse_networks
from app.delivery.transport import (
    AiohttpTransport,
    BlockedDestination,
    Http11Transport,
    Transport,
    TransportError,
)
from app.main import create_app
from tests import conftest
from tests.conftest import HandlerServer, RunningServer, register, wait_for_state

CLIENTS = ["http11", "aiohttp"]
OK = b'HTTP/1.1 200 OK\r\nContent-Length: 13\r\n\r\n{"result": 1}'
OK_AND_CLOSE = b'HTTP/1.1 200 OK\r\nContent-Length: 13\r\nConnection: close\r\n\r\n{"result": 1}'


class Names:
    """An injected resolver: host name → the addresses it answers now (changed by the test); every
    question recorded. An unknown name fails as the system's resolver would."""

    def __init__(self, answers: dict[str, list[str]] | None = None) -> None:
        self.answers = dict(answers or {})
        self.asked: list[str] = []

    def answer(self, name: str, addresses: list[str]) -> None:
        self.answers[name] = addresses

    async def __call__(self, host: str, port: int) -> list[str]:
        self.asked.append(host)
        if host not in self.answers:
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return self.answers[host]


class Listener:
    """A TCP server on one 127.0.0.x address that counts connections. It answers each request with
    `reply` (HTTP), or relays the connection to `relay_to` (a port on 127.0.0.1)."""

    def __init__(self, address: str, port: int = 0, reply: bytes = OK, relay_to: int | None = None,
                 tls: ssl.SSLContext | None = None) -> None:
        self.address, self.port, self.reply, self.relay_to, self.tls = address, port, reply, relay_to, tls
        self.connections = 0
        self.requests: list[bytes] = []
        self.server: asyncio.base_events.Server | None = None
        self.writers: list[asyncio.StreamWriter] = []

    async def start(self) -> Listener:
        self.server = await asyncio.start_server(self._serve, self.address, self.port, ssl=self.tls)
        self.port = self.server.sockets[0].getsockname()[1]
        return self

    def url(self, host: str | None = None, path: str = "/hook") -> str:
        return f"{'https' if self.tls else 'http'}://{host or self.address}:{self.port}{path}"

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        self.writers.append(writer)
        if self.relay_to is not None:
            await self._relay(reader, writer)
            return
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = next((int(line.split(b":", 1)[1]) for line in head.split(b"\r\n")
                               if line.lower().startswith(b"content-length:")), 0)
                self.requests.append(head + await reader.readexactly(length))
                writer.write(self.reply)
                await writer.drain()
                if b"Connection: close" in self.reply:
                    break
        except (asyncio.IncompleteReadError, ConnectionError, ssl.SSLError):
            pass
        finally:
            writer.close()

    async def _relay(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.relay_to)
        self.writers.append(up_writer)

        async def pipe(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
            try:
                while data := await src.read(65536):
                    dst.write(data)
                    await dst.drain()
            except ConnectionError:
                pass
            finally:
                dst.close()

        await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer))

    async def stop(self) -> None:
        for writer in self.writers:
            writer.close()
        if self.server is not None:
            self.server.close()
            await self.server.wait_closed()


@pytest.fixture
async def listen() -> AsyncIterator[Callable[..., Awaitable[Listener]]]:
    started: list[Listener] = []

    async def start(address: str = "127.0.0.1", **kwargs: Any) -> Listener:
        listener = await Listener(address, **kwargs).start()
        started.append(listener)
        return listener

    yield start
    for listener in started:
        await listener.stop()
    await asyncio.sleep(0)


async def pair(listen: Callable[..., Awaitable[Listener]], **kwargs: Any) -> tuple[Listener, Listener]:
    """Listeners on 127.0.0.1 and 127.0.0.2 at the same port (a host name's two answers)."""
    for _ in range(20):
        first = await listen("127.0.0.1", **kwargs)
        try:
            return first, await listen("127.0.0.2", port=first.port, **kwargs)
        except OSError:  # that port was taken on 127.0.0.2: try another
            continue
    raise AssertionError("no port free on both 127.0.0.1 and 127.0.0.2")


@pytest.fixture(params=CLIENTS)
async def make_transport(request: pytest.FixtureRequest) -> AsyncIterator[Callable[..., Transport]]:
    made: list[Transport] = []

    def make(networks: str, resolver: Names, ssl_context: ssl.SSLContext | None = None) -> Transport:
        cls = Http11Transport if request.param == "http11" else AiohttpTransport
        made.append(cls(8, 1000, ssl_context=ssl_context, networks=parse_networks(networks), resolver=resolver))
        return made[-1]

    yield make
    for t in made:
        await t.close()


# -- the transports --------------------------------------------------------------------------------


async def test_a_name_resolving_to_loopback_is_refused_under_public_and_nothing_connects(make_transport, listen):
    peer = await listen()
    names = Names({"handler.test": ["127.0.0.1"]})
    with pytest.raises(BlockedDestination) as refused:
        await make_transport("public", names).post(peer.url("handler.test"), b"{}", {}, 5)
    assert peer.connections == 0
    message = str(refused.value)
    assert "handler.test" in message and "127.0.0.1" in message and "loopback" in message
    assert "JOBWIRE_HANDLER_NETWORKS=public" in message


@pytest.mark.parametrize("answer", ["64:ff9b::7f00:1", "::ffff:0:7f00:1", "::7f00:1", "2002:7f00:1::"])
async def test_a_name_resolving_to_an_ipv6_spelling_of_loopback_is_refused_under_public(make_transport, listen, answer):
    peer = await listen()
    names = Names({"handler.test": [answer]})
    with pytest.raises(BlockedDestination, match=r"\(as 127\.0\.0\.1\) is loopback"):
        await make_transport("public", names).post(peer.url("handler.test"), b"{}", {}, 5)
    assert peer.connections == 0


@pytest.mark.parametrize("networks", ["any", "private", "loopback", "127.0.0.0/8"])
async def test_a_name_resolving_to_loopback_is_delivered_where_loopback_is_allowed(make_transport, listen, networks):
    peer = await listen()
    reply = await make_transport(networks, Names({"handler.test": ["127.0.0.1"]})).post(
        peer.url("handler.test"), b"{}", {}, 5)
    assert reply.status == 200 and peer.connections == 1
    assert b"Host: handler.test:%d" % peer.port in peer.requests[0]  # by address, for the name


async def test_only_the_allowed_answers_of_a_name_are_connected_to(make_transport, listen):
    allowed, refused = await pair(listen)
    names = Names({"mixed.test": ["127.0.0.2", "127.0.0.1"]})
    reply = await make_transport("127.0.0.1/32", names).post(allowed.url("mixed.test"), b"{}", {}, 5)
    assert reply.status == 200
    assert (allowed.connections, refused.connections) == (1, 0)


async def test_a_rebinding_answer_is_caught_at_the_next_connection(make_transport, listen):
    """First answer allowed (127.0.0.1), the next one refused (127.0.0.2): each reply closes its
    connection, so the second call opens a new one, resolves again and is refused."""
    first, second = await pair(listen, reply=OK_AND_CLOSE)
    names = Names({"rebind.test": ["127.0.0.1"]})
    transport = make_transport("127.0.0.1/32", names)
    assert (await transport.post(first.url("rebind.test"), b"{}", {}, 5)).status == 200
    names.answer("rebind.test", ["127.0.0.2"])
    with pytest.raises(BlockedDestination, match="127.0.0.2"):
        await transport.post(first.url("rebind.test"), b"{}", {}, 5)
    assert (first.connections, second.connections) == (1, 0)
    assert names.asked == ["rebind.test", "rebind.test"]


async def test_a_kept_alive_connection_is_reused_without_resolving_again(make_transport, listen):
    """The check is made when a connection opens; a pooled one was judged then (no DNS cache)."""
    peer = await listen()
    names = Names({"handler.test": ["127.0.0.1"]})
    transport = make_transport("loopback", names)
    for _ in range(3):
        assert (await transport.post(peer.url("handler.test"), b"{}", {}, 5)).status == 200
    assert peer.connections == 1 and names.asked == ["handler.test"]


@pytest.mark.parametrize(("networks", "host"), [
    ("public", "127.0.0.1"),
    ("public", "[::ffff:127.0.0.1]"),  # IPv4-mapped: judged as 127.0.0.1
    ("public", "[::ffff:0:7f00:1]"),  # IPv4-translated (SIIT): judged as 127.0.0.1
    ("any", "[2002:a9fe:a9fe::]"),  # 6to4 of 169.254.169.254, the cloud metadata address
    ("10.0.0.0/8", "127.0.0.1"),
    ("any", "0.0.0.0"),  # connecting to 0.0.0.0 reaches this host: never called
])
async def test_a_refused_ip_literal_is_not_connected_to(make_transport, listen, networks, host):
    peer = await listen()
    names = Names()
    with pytest.raises(BlockedDestination, match="JOBWIRE_HANDLER_NETWORKS"):
        await make_transport(networks, names).post(peer.url(host), b"{}", {}, 5)
    assert peer.connections == 0 and names.asked == []


async def test_an_allowed_ip_literal_is_called_without_asking_the_resolver(make_transport, listen):
    peer = await listen()
    names = Names()
    assert (await make_transport("private", names).post(peer.url(), b"{}", {}, 5)).status == 200
    assert peer.connections == 1 and names.asked == []


async def test_a_name_that_does_not_resolve_is_a_connection_error_not_a_blocked_one(make_transport):
    with pytest.raises(TransportError) as failed:
        await make_transport("any", Names()).post("http://nowhere.test:9/x", b"{}", {}, 5)
    assert not isinstance(failed.value, BlockedDestination)


async def test_tls_by_address_still_verifies_the_host_name(make_transport, listen):
    ca = trustme.CA()
    server = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("handler.test").configure_cert(server)
    trust = ssl.create_default_context()
    ca.configure_trust(trust)
    peer = await listen(tls=server)
    names = Names({"handler.test": ["127.0.0.1"], "impostor.test": ["127.0.0.1"]})
    transport = make_transport("loopback", names, ssl_context=trust)
    assert (await transport.post(peer.url("handler.test"), b"{}", {}, 5)).status == 200
    with pytest.raises(TransportError) as failed:  # the same address, a name its certificate does not carry
        await transport.post(peer.url("impostor.test"), b"{}", {}, 5)
    assert not isinstance(failed.value, BlockedDestination)
    assert "certificate" in str(failed.value).lower() or "hostname" in str(failed.value).lower()


# -- through a running Jobwire ---------------------------------------------------------------------


@pytest.fixture
def resolving(monkeypatch: pytest.MonkeyPatch) -> Callable[[Names], None]:
    """Servers the `jobwire` fixture starts from now on resolve handler hosts with `names`."""
    def use(names: Names) -> None:
        monkeypatch.setattr(conftest, "create_app", functools.partial(create_app, resolver=names))
    return use


async def client_for(server: RunningServer) -> httpx.AsyncClient:
    return httpx.AsyncClient(base_url=server.url, timeout=10)


async def enqueue(api: httpx.AsyncClient, handler: str) -> str:
    response = await api.post("/v1/jobs", json={"handler": handler, "payload": {"n": 1}})
    assert response.status_code == 201, response.text
    return response.json()["id"]


async def attempts(api: httpx.AsyncClient, execution_id: str) -> list[dict[str, Any]]:
    response = await api.get(f"/v1/executions/{execution_id}/attempts")
    assert response.status_code == 200, response.text
    return response.json()["items"]


@pytest.mark.parametrize("client", CLIENTS)
async def test_under_public_a_name_resolving_to_loopback_dead_letters_blocked_and_reaches_nothing(
        jobwire, handler: HandlerServer, listen, resolving, client):
    relay = await listen(relay_to=int(handler.url.rsplit(":", 1)[1]))
    resolving(Names({"handler.test": ["127.0.0.1"]}))
    server = await jobwire(handler_networks="public", dispatch_client=client)
    async with await client_for(server) as api:
        # A host name is not resolved at registration: the call is where it is judged.
        await register(api, "internal", relay.url("handler.test", "/h"))
        execution_id = await enqueue(api, "internal")
        done = await wait_for_state(api, execution_id, "DEAD_LETTER")
        assert done["error_type"] == "blocked_destination" and done["attempt"] == 0  # not retried
        assert "handler.test" in done["last_error"] and "127.0.0.1" in done["last_error"]
        assert "JOBWIRE_HANDLER_NETWORKS=public" in done["last_error"]
        [attempt] = await attempts(api, execution_id)
        assert attempt["error_type"] == "blocked_destination" and attempt["http_status"] is None
    await asyncio.sleep(0.2)  # nothing arrives late either
    assert relay.connections == 0 and handler.received == []


@pytest.mark.parametrize("client", CLIENTS)
@pytest.mark.parametrize("networks", ["private", "any"])
async def test_where_loopback_is_allowed_the_same_handler_is_delivered(
        jobwire, handler: HandlerServer, listen, resolving, client, networks):
    relay = await listen(relay_to=int(handler.url.rsplit(":", 1)[1]))
    resolving(Names({"handler.test": ["127.0.0.1"]}))
    server = await jobwire(handler_networks=networks, dispatch_client=client)
    async with await client_for(server) as api:
        await register(api, "internal", relay.url("handler.test", "/h"))
        execution_id = await enqueue(api, "internal")
        done = await wait_for_state(api, execution_id, "SUCCEEDED")
        assert done["result"] == {"n": 1}
    assert relay.connections >= 1 and len(handler.received) == 1


@pytest.mark.parametrize("client", CLIENTS)
async def test_a_dns_answer_that_changes_after_registration_is_caught_at_the_next_call(
        jobwire, handler: HandlerServer, listen, resolving, client):
    async def closing(_: web.Request, job: dict[str, Any]) -> web.StreamResponse:
        response = web.json_response({"result": job["payload"]})
        response.force_close()  # the next call needs a new connection, so it resolves again
        return response

    handler.route("/h", closing)
    first, second = await pair(listen, relay_to=int(handler.url.rsplit(":", 1)[1]))
    names = Names({"rebind.test": ["127.0.0.1"]})
    resolving(names)
    server = await jobwire(handler_networks="127.0.0.1/32", dispatch_client=client)
    async with await client_for(server) as api:
        await register(api, "moving", first.url("rebind.test", "/h"))
        await wait_for_state(api, await enqueue(api, "moving"), "SUCCEEDED")
        names.answer("rebind.test", ["127.0.0.2"])  # rebinding: now an address the setting refuses
        done = await wait_for_state(api, await enqueue(api, "moving"), "DEAD_LETTER")
        assert done["error_type"] == "blocked_destination" and "127.0.0.2" in done["last_error"]
    assert (first.connections, second.connections) == (1, 0)
    assert len(handler.received) == 1
