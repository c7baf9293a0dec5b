"""`client.events`, the SDK's side of GET /v1/events (the feed of every execution's transition
events), against a real server and database, with both clients: a page and the rest from its
`next_cursor`, nothing twice; `list` following pages to the end and its `cursor` to resume from;
the filters; `follow` yielding an event made after it started, polling. The server serves the
API alone (no dispatcher): the only events are the ones a test makes, by enqueueing a job for
much later and cancelling it."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from jobwire import Event, EventPage, ProblemError
from tests.conftest import RunningServer, register
from tests.sdk.conftest import MakeClient

NOWHERE = "http://127.0.0.1:9/jobs"
LATER = "2999-01-01T00:00:00Z"


@pytest.fixture
async def client(api_only_server: RunningServer, db: Any, make_client: MakeClient) -> Any:
    """A client (sync or async) on an API-only server over the emptied database, with the handlers
    `h` and `other` registered."""
    async with httpx.AsyncClient(base_url=api_only_server.url, timeout=30) as http:
        await register(http, "h", NOWHERE)
        await register(http, "other", NOWHERE)
    return make_client(api_only_server.url)


async def cancelled(client: Any, handler: str = "h", **options: Any) -> str:
    """A job enqueued for later and cancelled: one execution.cancelled event; its execution id."""
    execution = await client.jobs.enqueue(handler, run_at=LATER, **options)
    await client.executions.cancel(execution.id)
    return str(execution.id)


async def drain(feed: Any) -> list[Event]:
    """A feed of either client, iterated to its end (the blocking one in a worker thread)."""
    if isinstance(feed, AsyncIterator):
        return [event async for event in feed]
    return await asyncio.to_thread(list, feed)


async def next_of(feed: Any, timeout: float = 10.0) -> Event:
    """The feed's next event, within `timeout` seconds."""
    if isinstance(feed, AsyncIterator):
        return await asyncio.wait_for(anext(feed), timeout)
    return await asyncio.wait_for(asyncio.to_thread(next, feed), timeout)


def executions_of(events: list[Event]) -> list[str]:
    return [event.data.execution_id for event in events]


async def test_a_page_then_its_next_cursor_gives_the_rest_and_nothing_twice(client):
    ids = [await cancelled(client) for _ in range(3)]
    first = await client.events.page(limit=2)
    assert isinstance(first, EventPage) and isinstance(first.next_cursor, str)
    assert [(e.type, e.data.execution_id) for e in first.items] == [("execution.cancelled", i) for i in ids[:2]]
    rest = await client.events.page(first.next_cursor, limit=2)
    assert executions_of(rest.items) == ids[2:]
    assert {e.id for e in first.items}.isdisjoint(e.id for e in rest.items)
    end = await client.events.page(rest.next_cursor)
    assert (end.items, end.next_cursor) == ([], rest.next_cursor)  # at the end: where to ask again
    later = await cancelled(client)
    assert executions_of((await client.events.page(end.next_cursor)).items) == [later]
    assert [first.items[0]] == await client.executions.events(ids[0])  # the same event as the execution's own


async def test_list_follows_the_pages_to_the_end_and_its_cursor_resumes(client):
    ids = [await cancelled(client) for _ in range(5)]
    assert executions_of(await client.events.list(limit=2)) == ids  # three pages, and the empty fourth
    feed = client.events.sdk.list(limit=2)
    assert feed.cursor is None  # from the oldest stored event
    assert executions_of(await drain(feed)) == ids
    assert await client.events.list(feed.cursor) == []  # its cursor is the end: nothing twice
    later = await cancelled(client)
    assert executions_of(await client.events.list(feed.cursor)) == [later]

    partway = client.events.sdk.list(limit=2)
    assert (await next_of(partway)).data.execution_id == ids[0]
    assert partway.cursor is None  # within a page: where that page began (a resume would give ids[0] again)
    assert (await next_of(partway)).data.execution_id == ids[1]
    assert executions_of(await client.events.list(partway.cursor)) == [*ids[2:], later]  # the page is done


async def test_the_feed_filters_by_types_queue_and_handler(client):
    mail = await cancelled(client, queue="mail")
    other = await cancelled(client, "other")
    await client.executions.retry(mail)
    assert [e.type for e in (await client.events.page(queue="mail")).items] == ["execution.cancelled",
                                                                                "execution.retried"]
    assert executions_of(await client.events.list(handler="other")) == [other]
    assert [e.type for e in await client.events.list(types=["execution.retried"])] == ["execution.retried"]
    both = await client.events.page(types=["execution.retried", "execution.cancelled"], queue="mail", limit=10)
    assert executions_of(both.items) == [mail, mail]
    assert executions_of(await client.events.list(types="execution.cancelled")) == [mail, other]  # a string as is
    once = (name for name in ["execution.cancelled"])  # read once, for every page
    assert executions_of(await client.events.list(types=once, limit=1)) == [mail, other]
    with pytest.raises(ProblemError) as refused:
        await client.events.page(types=["execution.exploded"])
    assert (refused.value.status, refused.value.fields) == (422, ["types"])


async def test_follow_yields_an_event_made_after_it_started_then_the_next(client):
    feed = client.events.sdk.follow(poll_seconds=0.05)
    waiting = asyncio.ensure_future(next_of(feed))
    for _ in range(500):
        if feed.cursor is not None:  # it read the feed, empty, and polls
            break
        await asyncio.sleep(0.01)
    assert feed.cursor is not None and not waiting.done()
    made = await cancelled(client)
    event = await waiting
    assert (event.type, event.data.execution_id, event.data.new_state) == ("execution.cancelled", made, "CANCELLED")
    assert await client.events.list(feed.cursor) == []  # stored now, it resumes after that event
    second = await cancelled(client, queue="mail")
    assert (await next_of(feed)).data.execution_id == second


async def test_follow_with_filters_yields_only_what_they_match(client):
    feed = client.events.sdk.follow(poll_seconds=0.05, types=["execution.retried"], queue="mail")
    waiting = asyncio.ensure_future(next_of(feed))
    await cancelled(client)
    mail = await cancelled(client, queue="mail")
    await client.executions.retry(mail)
    event = await waiting
    assert (event.type, event.data.execution_id) == ("execution.retried", mail)


@pytest.mark.parametrize("seconds", [0, -1.0])
async def test_follow_refuses_a_poll_that_is_not_more_than_zero(client, seconds: float):
    with pytest.raises(ValueError, match="poll_seconds must be more than 0"):
        client.events.sdk.follow(poll_seconds=seconds)
