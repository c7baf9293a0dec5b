"""GET /v1/events/stream: the event feed as server-sent events.

Each event is one message: `id:` the cursor right after it (a client that reconnects sends it
back as `Last-Event-ID` and gets exactly the rest), `event:` its type, `data:` the item
GET /v1/events gives, one line of JSON. The stream reads the feed a page at a time (up to
1,000 events), again at once after a page that had events, after `poll_seconds` at its end; when
nothing was written for `keepalive_seconds` it writes a comment (`: keepalive`), so that proxies
and clients see a live connection.

Three tasks make the response, and whichever ends first ends the others, even while a write waits
for a slow client: the messages; the client's disconnect; and a guard that returns once the node
drains (app/api/draining.py) or the request's key no longer stands (checked every
`key_check_seconds` through ApiKeyService's cache: a deleted key ends the stream within its
`cache_seconds` + that interval). A stream the server ends is ended cleanly (the last chunk), so a
client sees the end and reconnects with `Last-Event-ID`: to be refused, or resumed.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass

import orjson
from starlette.requests import Request
from starlette.responses import StreamingResponse
from starlette.types import Receive, Scope, Send

from app.api.auth import queues_of, still_authorized
from app.api.executions.views import event_view
from app.domain.access import Scope as KeyScope
from app.domain.errors import DatabaseUnavailable
from app.domain.events import Event
from app.domain.jsontext import dumps
from app.domain.logfields import fields
from app.services.events import MAX_FEED_PAGE, EventFeedService

log = logging.getLogger(__name__)

KEEPALIVE = b": keepalive\n\n"
HEADERS = {"cache-control": "no-cache", "x-accel-buffering": "no"}  # no proxy may hold messages back
END_SECONDS = 1.0  # how long the last chunk may wait for a client that does not read


@dataclass(frozen=True, slots=True)
class StreamTiming:
    poll_seconds: float = 0.5  # between two reads at the end of the feed: idle latency under 1 s
    keepalive_seconds: float = 15.0  # a comment when nothing was written for this long
    key_check_seconds: float = 1.0  # the key checked again (a dict read while ApiKeyService's cache holds)


TIMING = StreamTiming()


def timing_of(request: Request) -> StreamTiming:
    """The stream's timing: TIMING, unless app.state.event_stream_timing says otherwise (tests)."""
    return getattr(request.app.state, "event_stream_timing", TIMING)


@dataclass(frozen=True, slots=True)
class StreamFilters:
    types: Sequence[str] | None
    queue: str | None
    handler: str | None
    queues: frozenset[str] | None  # the key's


def message(event: Event, cursor: str) -> bytes:
    """One SSE message: the cursor after the event, its type, the item as GET /v1/events gives it
    (JSON has no raw line break: one `data:` line)."""
    data = dumps(event_view(event), option=orjson.OPT_UTC_Z)
    return b"id: " + cursor.encode() + b"\nevent: " + event.type.value.encode() + b"\ndata: " + data + b"\n\n"


async def messages(feed: EventFeedService, after: str | None, filters: StreamFilters, timing: StreamTiming,
                   clock: Callable[[], float] = time.monotonic) -> AsyncIterator[bytes]:
    """The stream's chunks, without end: each page's messages, and keepalives while idle. Ends
    when the database cannot be read (the client reconnects, and is answered 503 until it can)."""
    cursor = after
    written = clock()
    while True:
        try:
            page = await feed.page(cursor, MAX_FEED_PAGE, types=filters.types, queue=filters.queue,
                                   handler=filters.handler, queues=filters.queues)
        except DatabaseUnavailable as exc:
            log.warning("event stream ended: the database cannot be read: %s", exc, extra=fields(cursor=cursor))
            return
        cursor = page.next_cursor
        if page.items:
            yield b"".join(message(event, page.cursor_after(i)) for i, event in enumerate(page.items))
            written = clock()
            continue
        quiet = clock() - written
        if quiet >= timing.keepalive_seconds:
            yield KEEPALIVE
            written, quiet = clock(), 0.0
        await asyncio.sleep(min(timing.poll_seconds, timing.keepalive_seconds - quiet))


async def guard(request: Request, timing: StreamTiming, draining: asyncio.Event) -> None:
    """Returns when the stream must end: the node drains, or the request's key no longer stands
    (deleted; or, without a key, the API closed by the first one). A database that cannot say
    ends it too: the reconnect is answered."""
    while True:
        try:
            await asyncio.wait_for(draining.wait(), timing.key_check_seconds)
            return
        except TimeoutError:
            pass
        try:
            if not await still_authorized(request, KeyScope.READ):
                return
        except DatabaseUnavailable:
            return


class EventStreamResponse(StreamingResponse):
    """text/event-stream: `content`'s chunks until the client goes, or `until` returns (then the
    stream is ended cleanly)."""

    media_type = "text/event-stream"

    def __init__(self, content: AsyncIterator[bytes], until: Callable[[], Awaitable[None]]) -> None:
        super().__init__(content, headers=HEADERS)
        self.until = until

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        started = gone = False

        async def write() -> None:
            nonlocal started, gone
            try:
                await send({"type": "http.response.start", "status": self.status_code, "headers": self.raw_headers})
                started = True
                async for chunk in self.body_iterator:
                    await send({"type": "http.response.body", "body": chunk, "more_body": True})
            except OSError:  # a server of ASGI spec 2.4 says a disconnect so
                gone = True

        async def disconnect() -> None:
            nonlocal gone
            while (await receive())["type"] != "http.disconnect":
                pass
            gone = True

        tasks = [asyncio.ensure_future(write()), asyncio.ensure_future(disconnect()),
                 asyncio.ensure_future(self.until())]
        try:
            done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            aclose = getattr(self.body_iterator, "aclose", None)
            if aclose is not None:
                await aclose()
        for task in done:
            if not task.cancelled() and (error := task.exception()) is not None:
                raise error
        if gone:
            return
        # Ended by the server: the last chunk, so the client sees the end (a client that does not
        # read is left to the server to close).
        with contextlib.suppress(OSError, TimeoutError):
            async with asyncio.timeout(END_SECONDS):
                if not started:
                    await send({"type": "http.response.start", "status": self.status_code,
                                "headers": self.raw_headers})
                await send({"type": "http.response.body", "body": b"", "more_body": False})


def stream_response(request: Request, feed: EventFeedService, after: str | None, types: Sequence[str] | None,
                    queue: str | None, handler: str | None, draining: asyncio.Event) -> EventStreamResponse:
    """The stream of the feed after `after` (None: from the oldest stored event) for this request,
    filtered as asked and to its key's queues."""
    timing = timing_of(request)
    filters = StreamFilters(types, queue, handler, queues_of(request))
    return EventStreamResponse(messages(feed, after, filters, timing), lambda: guard(request, timing, draining))
