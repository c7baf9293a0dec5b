"""`client.events.stream`, the SDK's side of GET /v1/events/stream, against a real server and
database, with both clients: the feed's events in its order, each with the cursor that resumes
right after it; the filters; a connection cut mid-stream (a proxy drops it) is made again with
`Last-Event-ID`, and the events made meanwhile come once, none missed, none repeated; a key
deleted while its stream is open: the stream ends, and reconnecting raises the 401. And
`jobwire events tail` against a node without the stream: it polls the feed instead."""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from aiohttp import web

from app.api.events.stream import StreamTiming
from jobwire import Event, ProblemError, StreamedEvent
from tests.conftest import RunningServer, free_port, register
from tests.sdk.conftest import MakeClient
from tests.sdk.test_cli import JOBWIRE, environment

BOOT = {"authorization": "Bearer boot"}
NOWHERE = "http://127.0.0.1:9/jobs"
LATER = "2999-01-01T00:00:00Z"


@pytest.fixture
async def http(boot_server: RunningServer, db: Any) -> AsyncIterator[httpx.AsyncClient]:
    """A plain client of the module's server (bootstrap key `boot`), the tables emptied, the
    handlers `h` and `other` registered; the stream polls and idles quickly."""
    boot_server.app.state.event_stream_timing = StreamTiming(poll_seconds=0.05, keepalive_seconds=0.5)
    async with httpx.AsyncClient(base_url=boot_server.url, timeout=30, headers=BOOT) as client:
        await register(client, "h", NOWHERE)
        await register(client, "other", NOWHERE)
        yield client


@pytest.fixture
def client(http: httpx.AsyncClient, boot_server: RunningServer, make_client: MakeClient) -> Any:
    return make_client(boot_server.url, api_key="boot")


async def cancelled(http: httpx.AsyncClient, handler: str = "h", **fields: Any) -> str:
    """A job enqueued for later and cancelled: one execution.cancelled event; its execution id."""
    created = await http.post("/v1/jobs", json={"handler": handler, "run_at": LATER, **fields})
    assert created.status_code == 201, created.text
    execution_id = created.json()["id"]
    assert (await http.post(f"/v1/executions/{execution_id}/cancel")).status_code == 200
    return str(execution_id)


async def next_of(stream: Any, timeout: float = 30.0) -> StreamedEvent:
    """The stream's next event, within `timeout` seconds (the blocking one's in a worker thread)."""
    if isinstance(stream, AsyncIterator):
        return await asyncio.wait_for(anext(stream), timeout)
    return await asyncio.wait_for(asyncio.to_thread(next, stream), timeout)


async def closed(stream: Any) -> None:
    if isinstance(stream, AsyncIterator):
        await stream.aclose()
    else:
        await asyncio.to_thread(stream.close)


@contextlib.asynccontextmanager
async def opened(client: Any, *args: Any, **filters: Any) -> AsyncIterator[Any]:
    stream = client.events.sdk.stream(*args, **filters)
    try:
        yield stream
    finally:
        await closed(stream)


def executions_of(events: list[Event]) -> list[str]:
    return [event.data.execution_id for event in events]


async def test_the_stream_yields_the_feeds_events_each_with_the_cursor_right_after_it(client, http):
    made = [await cancelled(http) for _ in range(3)]
    page = await client.events.page()
    async with opened(client) as stream:
        first = [await next_of(stream) for _ in range(3)]
        assert all(isinstance(e, StreamedEvent) for e in first)
        assert [e.raw for e in first] == [e.raw for e in page.items]  # the feed's items, in its order
        assert (first[-1].cursor, stream.cursor) == (page.next_cursor, page.next_cursor)
        live = await cancelled(http)
        fourth = await next_of(stream)
    assert executions_of([*first, fourth]) == [*made, live]
    assert executions_of(await client.events.list(first[0].cursor)) == [*made[1:], live]  # a cursor of the feed
    async with opened(client, first[1].cursor) as resumed:  # and of the stream: right after its event
        assert executions_of([await next_of(resumed), await next_of(resumed)]) == [made[2], live]


async def test_the_stream_takes_the_filters(client, http):
    mail = await cancelled(http, queue="mail")
    other = await cancelled(http, "other")
    assert (await http.post(f"/v1/executions/{mail}/retry")).status_code == 200
    async with opened(client, types=["execution.retried", "execution.cancelled"], queue="mail") as stream:
        assert [(e.type, e.data.execution_id) for e in [await next_of(stream), await next_of(stream)]] == [
            ("execution.cancelled", mail), ("execution.retried", mail)]
    async with opened(client, handler="other", types="execution.cancelled") as stream:
        assert (await next_of(stream)).data.execution_id == other
    with pytest.raises(ProblemError) as refused:
        async with opened(client, types=["execution.exploded"]) as stream:
            await next_of(stream)
    assert (refused.value.status, refused.value.fields) == (422, ["types"])


class CuttingProxy:
    """A TCP proxy in front of Jobwire that keeps the first bytes of each connection (its request)
    and cuts every connection open when told to (`cut`)."""

    def __init__(self, upstream_port: int) -> None:
        self.upstream_port = upstream_port
        self.port = free_port()
        self.requests: list[bytes] = []
        self._open: set[asyncio.StreamWriter] = set()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._accept, "127.0.0.1", self.port)

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.upstream_port)
        self._open |= {writer, up_writer}
        first = await reader.read(65536)
        self.requests.append(first)
        up_writer.write(first)
        await asyncio.gather(self._pipe(reader, up_writer), self._pipe(up_reader, writer))

    async def _pipe(self, source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
        with contextlib.suppress(OSError, ConnectionError):
            while data := await source.read(65536):
                sink.write(data)
                await sink.drain()
        sink.close()
        self._open.discard(sink)

    def cut(self) -> None:
        for writer in list(self._open):
            writer.transport.abort()
        self._open.clear()

    async def stop(self) -> None:
        self.cut()
        self._server.close()


@pytest.fixture
async def proxy(boot_server: RunningServer) -> AsyncIterator[CuttingProxy]:
    cutting = CuttingProxy(boot_server.settings.port)
    await cutting.start()
    yield cutting
    await cutting.stop()


async def test_a_cut_connection_is_made_again_from_the_last_event_missing_and_repeating_nothing(
        http, proxy: CuttingProxy, make_client: MakeClient):
    made = [await cancelled(http) for _ in range(2)]
    client = make_client(proxy.url, api_key="boot")
    async with opened(client) as stream:
        first = [await next_of(stream), await next_of(stream)]
        assert executions_of(first) == made and len(proxy.requests) == 1
        proxy.cut()  # the connection drops
        later = [await cancelled(http) for _ in range(2)]  # made while it is down
        again = [await next_of(stream), await next_of(stream)]
        assert executions_of(again) == later  # once each, after the others
        newest = await cancelled(http)
        assert (await next_of(stream)).data.execution_id == newest
    assert len(proxy.requests) == 2
    assert f"last-event-id: {first[-1].cursor}\r\n".encode() in proxy.requests[1]  # (as the SDK writes it)
    assert b"last-event-id" not in proxy.requests[0].lower()  # from the oldest stored event


async def test_a_key_deleted_while_its_stream_is_open_ends_it_and_the_reconnect_raises_the_401(
        client, http, make_client: MakeClient, boot_server: RunningServer):
    created = await http.post("/v1/api-keys", json={"name": "doomed", "scopes": ["read"]})
    assert created.status_code == 201, created.text
    doomed = make_client(boot_server.url, api_key=created.json()["key"])
    made = await cancelled(http)
    async with opened(doomed) as stream:
        assert (await next_of(stream)).data.execution_id == made
        assert (await http.delete(f"/v1/api-keys/{created.json()['id']}")).status_code == 204
        with pytest.raises(ProblemError) as refused:
            await next_of(stream)
    assert refused.value.status == 401


async def test_events_tail_polls_the_feed_of_a_node_without_the_stream(tmp_path):
    """An older node answers 404 to the stream: `tail` follows the feed instead, every --poll."""
    asked: list[str] = []
    item = {"id": 7, "type": "execution.cancelled", "occurred_at": "2026-12-01T12:00:00Z",
            "data": {"execution_id": "00000000-0000-4000-8000-000000000007", "job_id": "j-7", "job_type": "DELAYED",
                     "queue": "default", "handler": "h", "new_state": "CANCELLED", "attempt": 0, "max_attempts": 3,
                     "error_type": None, "scheduled_at": "2026-12-01T12:00:00Z", "created_at": "2026-12-01T11:00:00Z",
                     "started_at": None, "completed_at": "2026-12-01T12:00:00Z", "metadata": None}}

    async def respond(request: web.Request) -> web.Response:
        asked.append(request.path_qs)
        if request.path == "/v1/events":
            after = request.query.get("after")
            page = {"items": [item] if after == "start" else [], "next_cursor": "after-7"}
            return web.json_response(page)
        return web.json_response({"type": "https://jobwire.dev/problems/not-found", "title": "Not found",
                                  "status": 404, "detail": "no such resource"}, status=404,
                                 content_type="application/problem+json")

    app = web.Application()
    app.router.add_route("GET", "/{tail:.*}", respond)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    port = free_port()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    try:
        tail = await asyncio.create_subprocess_exec(
            JOBWIRE, "events", "tail", "--after", "start", "--poll", "0.05", "--url", f"http://127.0.0.1:{port}",
            env=environment(), stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        try:
            assert tail.stdout is not None and tail.stderr is not None
            line = await asyncio.wait_for(tail.stdout.readline(), 60)
            assert line, (await tail.stderr.read()).decode()
            assert json.loads(line) == item
            for _ in range(600):
                if sum(path.startswith("/v1/events?") for path in asked) >= 3:
                    break
                await asyncio.sleep(0.05)
        finally:
            if tail.returncode is None:
                tail.send_signal(signal.SIGINT)
        status = await asyncio.wait_for(tail.wait(), 30)
        err = (await tail.stderr.read()).decode()
    finally:
        await runner.cleanup()
    assert asked[0].startswith("/v1/events/stream")  # the stream first
    assert "/v1/events?after=start" in asked and "/v1/events?after=after-7" in asked  # then the feed, polled
    assert status == 130 and err.strip() == "jobwire: stopped; resume with --after after-7", err
