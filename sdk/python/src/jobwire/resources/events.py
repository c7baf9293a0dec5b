"""`client.events`: the feed of every execution's transition events, one page at a time, to its
end, or followed as it grows; resumable from a stored cursor without missing an event."""

from __future__ import annotations

from collections import deque
from collections.abc import AsyncIterator, Iterator
from typing import Any, Unpack

from jobwire._protocol import Call, path, pause
from jobwire.models import Event, EventPage
from jobwire.resources._driver import AsyncDriver, Driver, share_docs
from jobwire.types import EventFilters


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


share_docs(AsyncEvents, Events)
