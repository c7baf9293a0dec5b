"""`client.events`: the feed of every execution's transition events, one page at a time, to its
end, or followed as it grows (polling the feed, or its server-sent event stream); resumable from
a stored cursor without missing an event."""

from __future__ import annotations

from collections import deque
from collections.abc import AsyncIterator, Iterator
from types import TracebackType
from typing import Any, Unpack

import httpx

from jobwire._json import loads
from jobwire._protocol import Call, path, pause
from jobwire.errors import InvalidResponse
from jobwire.models import Event, EventPage, StreamedEvent
from jobwire.resources._driver import AsyncDriver, Driver, share_docs
from jobwire.types import EventFilters, EventStreamFilters

EVENT_STREAM = "text/event-stream"
RECONNECT_SECONDS = 0.1  # after a stream ended or dropped, before it connects again
RECONNECT_MAX_SECONDS = 5.0  # the pause doubles while connections end before a line came


def as_sent(filters: EventFilters) -> EventFilters:
    """The filters with `types` comma-separated, as the API takes them (read once: a generator
    given as `types` serves every page of a feed)."""
    types = filters.get("types")
    if types is None or isinstance(types, str):
        return filters
    return {**filters, "types": ",".join(types)}


def list_events(after: str | None, filters: EventFilters) -> Call[EventPage]:
    params: dict[str, Any] = {**as_sent(filters), "after": after}
    return Call("listEvents", "GET", path("events"), EventPage.from_json, params=params)


def stream_events(cursor: str | None, filters: dict[str, Any]) -> Call[httpx.Response]:
    """The stream's request, resuming right after `cursor` (`Last-Event-ID`; None: from the
    oldest stored event): its answer is the open response."""
    headers = {"accept": f"{EVENT_STREAM}, application/problem+json"}
    if cursor is not None:
        headers["last-event-id"] = cursor
    return Call("streamEvents", "GET", path("events", "stream"), _opened, params=filters, headers=headers,
                stream=True)


def _opened(response: Any) -> httpx.Response:
    return response  # type: ignore[no-any-return]


def stream_params(filters: EventStreamFilters) -> dict[str, Any]:
    """The stream's query parameters: the filters, `types` comma-separated."""
    sent: dict[str, Any] = dict(filters)
    types = filters.get("types")
    if types is not None and not isinstance(types, str):
        sent["types"] = ",".join(types)
    return sent


def poll_interval(seconds: float) -> float:
    """`follow`'s `poll_seconds`, refused unless it is more than 0 (0 would ask without a pause)."""
    if not seconds > 0:
        raise ValueError(f"poll_seconds must be more than 0, not {seconds!r}")
    return seconds


class _Feed:
    """Where a feed is, for both iterators: the events of the page read last not yet yielded, and
    `cursor`, the position to resume from (see EventFeed)."""

    cursor: str | None

    def __init__(self, after: str | None, filters: EventFilters, poll_seconds: float | None) -> None:
        self.cursor = after
        self._filters = as_sent(filters)
        self._poll = poll_seconds  # None: stop at the first empty page
        self._held: deque[Event] = deque()
        self._held_end = after  # the next_cursor of the page whose events are held
        self._ended = False

    def _take(self) -> Event | None:
        """The next event held, or None when the page read last is spent. `cursor` moves to the
        page's next_cursor as its last event is handed out."""
        if not self._held:
            return None
        event = self._held.popleft()
        if not self._held:
            self.cursor = self._held_end
        return event

    def _ask(self) -> Call[EventPage]:
        return list_events(self.cursor, self._filters)

    def _read(self, page: EventPage) -> float | None:
        """Takes `page` in → the seconds to pause before asking again (an empty page, followed),
        else None (an empty page ends a listing)."""
        if page.items:
            self._held.extend(page.items)
            self._held_end = page.next_cursor
            return None
        self.cursor = page.next_cursor
        if self._poll is None:
            self._ended = True
        return self._poll


class EventFeed(_Feed, Iterator[Event]):
    """The iterator `client.events.list` and `client.events.follow` give: the feed's events, in its
    order, asking for the next page when one is spent.

    `cursor` is where to resume it later without missing an event: store it once the events
    yielded so far are handled, and pass it back as `after` (`client.events.follow(stored)`).
    It moves on when the last event of a page is yielded (and when an empty page is read);
    within a page it is where that page began, so a feed resumed from a cursor stored mid-page
    yields that page's earlier events again: delivery is at least once, and an event's `id`
    tells a repeat. None only until the first page of a feed started from the oldest event."""

    def __init__(self, driver: Driver, after: str | None, filters: EventFilters,
                 poll_seconds: float | None) -> None:
        super().__init__(after, filters, poll_seconds)
        self._driver = driver

    def __next__(self) -> Event:
        while (event := self._take()) is None:
            if self._ended:
                raise StopIteration
            wait = self._read(self._driver.run(self._ask()))
            if wait is not None:
                self._driver.run(pause(wait))
        return event


class AsyncEventFeed(_Feed, AsyncIterator[Event]):
    """EventFeed of the asyncio client: an async iterator (`async for`), with the same `cursor`."""

    def __init__(self, driver: AsyncDriver, after: str | None, filters: EventFilters,
                 poll_seconds: float | None) -> None:
        super().__init__(after, filters, poll_seconds)
        self._driver = driver

    async def __anext__(self) -> Event:
        while (event := self._take()) is None:
            if self._ended:
                raise StopAsyncIteration
            wait = self._read(await self._driver.run(self._ask()))
            if wait is not None:
                await self._driver.run(pause(wait))
        return event


class SseParser:
    """text/event-stream read a line at a time, as far as Jobwire's messages need the WHATWG rules:
    `data:` lines joined, the last `id:` kept, comments and other fields ignored; a blank line
    ends a message, which is an event when it has data and an id."""

    def __init__(self) -> None:
        self._data: list[str] = []
        self._id: str | None = None

    def line(self, line: str) -> StreamedEvent | None:
        if not line:
            data, self._data = self._data, []
            if not data or self._id is None:
                return None
            text = "\n".join(data)
            try:
                return StreamedEvent.of(loads(text), self._id)
            except (KeyError, TypeError, ValueError) as exc:
                raise InvalidResponse(f"GET /v1/events/stream: a message that is not Jobwire's event "
                                      f"({type(exc).__name__}: {exc})", status=200, content_type=EVENT_STREAM,
                                      body=text) from exc
        if line.startswith(":"):
            return None
        name, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if name == "data":
            self._data.append(value)
        elif name == "id" and "\0" not in value:
            self._id = value
        return None


class _Stream:
    """Where a stream is, for both iterators: `cursor`, the id of the last event yielded (where
    to resume), the parser of the connection open, and the pause before the next connection."""

    cursor: str | None

    def __init__(self, after: str | None, filters: EventStreamFilters) -> None:
        self.cursor = after
        self._params = stream_params(filters)
        self._parser = SseParser()
        self._lines_seen = False
        self._pause: float | None = None  # before the next connection (None: the first connects at once)
        self._closed = False

    def _connect(self) -> Call[httpx.Response]:
        return stream_events(self.cursor, self._params)

    def _opened(self, response: httpx.Response) -> None:
        """A connection answered 200: InvalidResponse unless it is an event stream."""
        kind = response.headers.get("content-type", "")
        if not kind.startswith(EVENT_STREAM):
            said = kind or "no content type"
            raise InvalidResponse(f"GET /v1/events/stream: the 200 answer is not an event stream ({said}); is the "
                                  "base URL Jobwire's?", status=200, content_type=kind, body="")
        self._parser = SseParser()  # a message the drop cut short comes again, whole
        self._lines_seen = False

    def _line(self, line: str) -> StreamedEvent | None:
        self._lines_seen = True
        event = self._parser.line(line)
        if event is not None:
            self.cursor = event.cursor
        return event

    def _dropped(self) -> float:
        """The connection ended (the server ended it, or it dropped): the pause before the next,
        doubling while connections end before a line came."""
        if self._lines_seen or self._pause is None:
            self._pause = RECONNECT_SECONDS
        else:
            self._pause = min(self._pause * 2, RECONNECT_MAX_SECONDS)
        return self._pause


class EventStream(_Stream, Iterator[StreamedEvent]):
    """The iterator `client.events.stream` gives: the feed's events as the server streams them
    (GET /v1/events/stream), without end, each a `StreamedEvent` with its `cursor`. A connection
    that ends or drops is made again with `Last-Event-ID`, the last event's cursor: no event is
    missed or repeated. A refusal on reconnecting (a deleted key: 401) is raised; so is
    `Unavailable` once the retry policy gives up on reaching a node. `cursor` is where to resume
    later (`client.events.stream(stored)`), None until the first event of a stream started from
    the oldest one. `close()` (or a `with` block) ends it and frees its connection."""

    def __init__(self, driver: Driver, after: str | None, filters: EventStreamFilters) -> None:
        super().__init__(after, filters)
        self._driver = driver
        self._response: httpx.Response | None = None
        self._lines: Iterator[str] | None = None

    def __next__(self) -> StreamedEvent:
        while not self._closed:
            if self._lines is None:
                if self._pause is not None:
                    self._driver.run(pause(self._pause))
                response = self._driver.run(self._connect())
                self._response = response
                self._opened(response)
                self._lines = response.iter_lines()
            try:
                line = next(self._lines)
            except (StopIteration, httpx.TransportError):
                self._end_connection()
                self._dropped()
                continue
            event = self._line(line)
            if event is not None:
                return event
        raise StopIteration

    def _end_connection(self) -> None:
        response, self._response, self._lines = self._response, None, None
        if response is not None:
            response.close()

    def close(self) -> None:
        """Ends the stream: its connection is closed, and the iterator stops."""
        self._closed = True
        self._end_connection()

    def __enter__(self) -> EventStream:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 traceback: TracebackType | None) -> None:
        self.close()


class AsyncEventStream(_Stream, AsyncIterator[StreamedEvent]):
    """EventStream of the asyncio client: an async iterator (`async for`), with the same `cursor`;
    `aclose()` (or an `async with` block) ends it."""

    def __init__(self, driver: AsyncDriver, after: str | None, filters: EventStreamFilters) -> None:
        super().__init__(after, filters)
        self._driver = driver
        self._response: httpx.Response | None = None
        self._lines: AsyncIterator[str] | None = None

    async def __anext__(self) -> StreamedEvent:
        while not self._closed:
            if self._lines is None:
                if self._pause is not None:
                    await self._driver.run(pause(self._pause))
                response = await self._driver.run(self._connect())
                self._response = response
                self._opened(response)
                self._lines = response.aiter_lines()
            try:
                line = await anext(self._lines)
            except (StopAsyncIteration, httpx.TransportError):
                await self._end_connection()
                self._dropped()
                continue
            event = self._line(line)
            if event is not None:
                return event
        raise StopAsyncIteration

    async def _end_connection(self) -> None:
        response, self._response, self._lines = self._response, None, None
        if response is not None:
            await response.aclose()

    async def aclose(self) -> None:
        """Ends the stream: its connection is closed, and the iterator stops."""
        self._closed = True
        await self._end_connection()

    async def __aenter__(self) -> AsyncEventStream:
        return self

    async def __aexit__(self, kind: type[BaseException] | None, error: BaseException | None,
                        traceback: TracebackType | None) -> None:
        await self.aclose()


class Events:
    """`client.events`."""

    def __init__(self, driver: Driver) -> None:
        self._driver = driver

    def page(self, after: str | None = None, **filters: Unpack[EventFilters]) -> EventPage:
        """One page of the feed of every execution's transition events (the items of
        `client.executions.events`), after `after` (a page's `next_cursor`; None: from the oldest
        stored event). Filters: `types` (a list of event types, e.g. `["execution.succeeded",
        "execution.dead_lettered"]`), `queue`, `handler`; `limit` is the page size (default 100, at
        most 1000). An empty page is the end for now; its `next_cursor`, never None, is where to
        ask again. The feed serves an event once every older write transaction has ended, so
        resuming from a stored cursor misses none; an API key limited to queues sees theirs."""
        return self._driver.run(list_events(after, filters))

    def list(self, after: str | None = None, **filters: Unpack[EventFilters]) -> EventFeed:
        """The feed's events after `after` (None: from the oldest stored), following cursors until
        a page comes back empty (filters as `page`'s). The iterator's `cursor` is then where to
        resume: store it, and pass it back as `after` later."""
        return EventFeed(self._driver, after, filters, None)

    def follow(self, after: str | None = None, *, poll_seconds: float = 1.0,
               **filters: Unpack[EventFilters]) -> EventFeed:
        """The feed's events after `after` (None: from the oldest stored), without end: at the end
        of the feed it asks again every `poll_seconds`, yielding each event as it comes (filters as
        `page`'s). Store the iterator's `cursor` once the events yielded are handled, and resume
        from it (`follow(stored)`) after a restart: no event is missed, and those of a page
        interrupted halfway come again (at least once). ValueError unless `poll_seconds` > 0."""
        return EventFeed(self._driver, after, filters, poll_interval(poll_seconds))

    def stream(self, after: str | None = None, **filters: Unpack[EventStreamFilters]) -> EventStream:
        """The feed's events after `after` (a cursor; None: from the oldest stored), without end,
        as the server streams them (`GET /v1/events/stream`, server-sent events): each event
        within about a second of its commit, without polling. Each is a `StreamedEvent` whose
        `cursor` is where to resume right after it. A dropped connection is made again with
        `Last-Event-ID`, missing and repeating nothing; a refusal then (a deleted key) is raised.
        Filters: `types`, `queue`, `handler` (as `page`'s). Close it (`close()`, or `with`) to
        free its connection when you stop before the end."""
        return EventStream(self._driver, after, filters)


class AsyncEvents:
    """`client.events` of the asyncio client."""

    def __init__(self, driver: AsyncDriver) -> None:
        self._driver = driver

    async def page(self, after: str | None = None, **filters: Unpack[EventFilters]) -> EventPage:
        return await self._driver.run(list_events(after, filters))

    def list(self, after: str | None = None, **filters: Unpack[EventFilters]) -> AsyncEventFeed:
        return AsyncEventFeed(self._driver, after, filters, None)

    def follow(self, after: str | None = None, *, poll_seconds: float = 1.0,
               **filters: Unpack[EventFilters]) -> AsyncEventFeed:
        return AsyncEventFeed(self._driver, after, filters, poll_interval(poll_seconds))

    def stream(self, after: str | None = None, **filters: Unpack[EventStreamFilters]) -> AsyncEventStream:
        return AsyncEventStream(self._driver, after, filters)


share_docs(AsyncEvents, Events)
