"""GET /v1/events/stream, the event feed as server-sent events (issue 23): the feed's events in
its order, each message's `id` the cursor right after its event, so a client that reconnects with
`Last-Event-ID` gets exactly the rest; the feed's filters; a queue-limited key sees its queues; a
key deleted while its stream is open has it ended within 5 s; keepalive comments while idle; the
stream ends when the client goes and when the node drains.

Every wait is on a condition, with generous timeouts. "Nothing more" is read as the keepalive
comment: the stream writes one only after it found the feed's end and stayed idle (a short
keepalive, set on the server, keeps that quick)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
import pytest

from app.api.draining import begin_draining
from app.api.events.stream import TIMING, StreamTiming
from tests.conftest import PROBLEM, RunningServer, problem_fields, register, settings_for, start_server
from tests.sse import Message, SseReader

BOOT = {"authorization": "Bearer boot"}
NOWHERE = "http://127.0.0.1:9/jobs"
LATER = "2999-01-01T00:00:00Z"
# Quick polls and keepalives; the key is checked as often as in production.
QUICK = StreamTiming(poll_seconds=0.05, keepalive_seconds=0.5)


def quick(server: RunningServer) -> None:
    server.app.state.event_stream_timing = QUICK


@pytest.fixture
async def api(boot_server: RunningServer, db: Any) -> AsyncIterator[httpx.AsyncClient]:
    """A client of the module's server (bootstrap key `boot`, sent by default), the tables
    emptied, the handlers `h` and `other` registered."""
    quick(boot_server)
    async with httpx.AsyncClient(base_url=boot_server.url, timeout=30, headers=BOOT) as client:
        await register(client, "h", NOWHERE)
        await register(client, "other", NOWHERE)
        yield client


async def cancelled(api: httpx.AsyncClient, handler: str = "h", **fields: Any) -> str:
    """A job enqueued for later and cancelled: one execution.cancelled event; its execution id."""
    created = await api.post("/v1/jobs", json={"handler": handler, "run_at": LATER, **fields})
    assert created.status_code == 201, created.text
    execution_id = created.json()["id"]
    assert (await api.post(f"/v1/executions/{execution_id}/cancel")).status_code == 200
    return str(execution_id)


@asynccontextmanager
async def stream(api: httpx.AsyncClient, headers: dict[str, str] | None = None,
                 **params: str) -> AsyncIterator[SseReader]:
    async with api.stream("GET", "/v1/events/stream", params=params, headers=headers) as response:
        yield SseReader(response)


def executions_of(messages: list[Message]) -> list[str]:
    return [m.data["data"]["execution_id"] for m in messages]


async def test_the_stream_serves_the_feed_in_order_and_each_id_resumes_right_after_its_event(api):
    made = [await cancelled(api) for _ in range(3)]
    feed = (await api.get("/v1/events")).json()
    async with stream(api) as sse:
        first = await sse.events(3)
        await sse.quiet()
        live = await cancelled(api)  # made while the stream is open: it comes
        [fourth] = await sse.events(1)
    assert [m.data for m in first] == feed["items"]  # the items of the feed, in its order
    assert [m.event for m in first] == ["execution.cancelled"] * 3
    assert first[-1].id == feed["next_cursor"]
    assert executions_of([fourth]) == [live]
    for i, message in enumerate(first):  # each id is the cursor right after its event
        after = (await api.get("/v1/events", params={"after": message.id})).json()["items"]
        assert after == [m.data for m in [*first[i + 1:], fourth]]

    later = [await cancelled(api) for _ in range(2)]  # made while no stream is open
    async with stream(api, headers={"Last-Event-ID": first[1].id}) as sse:
        rest = await sse.events(4)
        await sse.quiet()  # and nothing more: no repeat
    assert executions_of(rest) == [made[2], live, *later]  # no gap
    assert rest[0] == first[2] and rest[1] == fourth  # the same messages, ids included

    async with stream(api, after=rest[1].id) as sse:  # `after` resumes the same
        assert executions_of(await sse.events(2)) == later
        await sse.quiet()
    async with stream(api, headers={"Last-Event-ID": rest[2].id}, after=first[0].id) as sse:  # the header wins
        assert executions_of(await sse.events(1)) == later[1:]
        await sse.quiet()


async def test_the_stream_takes_the_feeds_filters(api):
    mail = await cancelled(api, queue="mail")
    other = await cancelled(api, "other")
    assert (await api.post(f"/v1/executions/{mail}/retry")).status_code == 200

    async def streamed(**params: str) -> list[tuple[str | None, str]]:
        async with stream(api, **params) as sse:
            found = []
            while (message := await sse.next()) is not None and message.comment is None:
                found.append((message.event, message.data["data"]["execution_id"]))
            return found

    assert await streamed(queue="mail") == [("execution.cancelled", mail), ("execution.retried", mail)]
    assert await streamed(handler="other") == [("execution.cancelled", other)]
    assert await streamed(types="execution.retried") == [("execution.retried", mail)]
    assert await streamed(types="execution.cancelled", queue="mail") == [("execution.cancelled", mail)]
    assert await streamed(queue="nowhere") == []


async def test_a_queue_limited_key_streams_its_queues_events_only(api):
    created = await api.post("/v1/api-keys", json={"name": "mail", "scopes": ["read"], "queues": ["mail"]})
    assert created.status_code == 201, created.text
    key = {"authorization": f"Bearer {created.json()['key']}"}
    theirs = await cancelled(api, queue="billing")
    mine = await cancelled(api, queue="mail")
    async with stream(api, headers=key) as sse:
        assert executions_of(await sse.events(1)) == [mine]
        await sse.quiet()
        hidden = await cancelled(api, queue="billing")  # while it is open, too
        shown = await cancelled(api, queue="mail")
        assert executions_of(await sse.events(1)) == [shown]
    async with stream(api, headers=key, queue="billing") as sse:  # asking for another queue shows nothing
        await sse.quiet()
    everything = [m async for m in everything_of(api)]
    assert executions_of(everything) == [theirs, mine, hidden, shown]  # the bootstrap key sees every queue


async def everything_of(api: httpx.AsyncClient) -> AsyncIterator[Message]:
    async with stream(api) as sse:
        while (message := await sse.next()) is not None and message.comment is None:
            yield message


async def test_a_key_deleted_on_another_node_has_its_open_stream_ended_within_5_seconds(
        api, boot_server: RunningServer, database_url: str):
    assert QUICK.key_check_seconds == TIMING.key_check_seconds  # as often as in production
    other_node = await start_server(settings_for(database_url, api_keys=["boot"]), background=False)
    try:
        created = await api.post("/v1/api-keys", json={"name": "doomed", "scopes": ["read"]})
        key = {"authorization": f"Bearer {created.json()['key']}"}
        made = await cancelled(api)
        async with stream(api, headers=key) as sse:
            assert executions_of(await sse.events(1)) == [made]
            await sse.quiet()  # it runs, and the node has the key in its cache
            async with httpx.AsyncClient(base_url=other_node.url, headers=BOOT, timeout=30) as other:
                deleted = await other.delete(f"/v1/api-keys/{created.json()['id']}")
            assert deleted.status_code == 204, deleted.text
            deleted_at = time.monotonic()
            await sse.end(timeout=30)  # ended cleanly: the comments, then the end
            took = time.monotonic() - deleted_at
        assert took < 5.0, f"the stream of a deleted key ended {took:.1f} s after the delete"
        refused = await api.get("/v1/events/stream", headers=key)  # reconnecting: refused
        assert refused.status_code == 401 and refused.headers["content-type"] == PROBLEM
    finally:
        await other_node.stop()


async def test_an_anonymous_stream_ends_when_the_first_key_closes_the_api(api_only_server: RunningServer, db):
    quick(api_only_server)
    async with httpx.AsyncClient(base_url=api_only_server.url, timeout=30) as open_api:
        async with stream(open_api) as sse:  # the API is open: no key at all
            await sse.quiet()
            created = await open_api.post("/v1/api-keys", json={"name": "first", "scopes": ["admin"]})
            assert created.status_code == 201, created.text
            await sse.end(timeout=30)
        assert (await open_api.get("/v1/events/stream")).status_code == 401


async def test_an_idle_stream_sends_keepalive_comments(api):
    assert TIMING.keepalive_seconds <= 15 and TIMING.poll_seconds <= 0.5  # production: the figures
    async with stream(api) as sse:
        started = time.monotonic()
        first = await sse.quiet()
        second = await sse.quiet()
        took = time.monotonic() - started
    assert first.comment == second.comment == "keepalive"
    assert took >= 2 * QUICK.keepalive_seconds * 0.9  # each after the stream idled for its interval
    async with api.stream("GET", "/v1/events/stream") as response:
        assert response.headers["content-type"] == "text/event-stream; charset=utf-8"
        assert response.headers["cache-control"] == "no-cache"
        assert response.headers["x-accel-buffering"] == "no"


@pytest.mark.parametrize("params, headers, field", [
    ({"after": "nope"}, {}, "after"),
    ({}, {"Last-Event-ID": "nope"}, "Last-Event-ID"),
    ({"after": "nope"}, {"Last-Event-ID": "also-nope"}, "Last-Event-ID"),  # the header is the position
    ({"types": "execution.exploded"}, {}, "types"),
    ({"types": ","}, {}, "types"),
    ({"limit": "10"}, {}, "limit"),  # the feed's page size: no parameter of the stream
])
async def test_bad_parameters_are_refused_naming_them(api, params, headers, field):
    response = await api.get("/v1/events/stream", params=params, headers=headers)
    assert problem_fields(response, 422) == [field]


async def test_a_key_without_read_is_refused(api):
    created = await api.post("/v1/api-keys", json={"name": "writer", "scopes": ["enqueue"]})
    response = await api.get("/v1/events/stream", headers={"authorization": f"Bearer {created.json()['key']}"})
    assert response.status_code == 403 and "read is needed" in response.json()["detail"]


async def test_the_stream_stops_on_the_server_when_the_client_goes(api, boot_server: RunningServer):
    tasks = boot_server.server.server_state.tasks  # the requests being answered
    async with stream(api) as sse:
        await sse.quiet()
        assert len(tasks) == 1
    for _ in range(500):
        if not tasks:
            break
        await asyncio.sleep(0.02)
    assert not tasks, "the stream went on after its client left"


async def test_a_draining_node_ends_its_streams_and_refuses_new_ones(database_url: str, db):
    server = await start_server(settings_for(database_url), background=False)
    try:
        quick(server)
        async with httpx.AsyncClient(base_url=server.url, timeout=30) as client:
            async with stream(client) as sse:
                await sse.quiet()
                begin_draining(server.app)  # what `jobwire serve` does as its shutdown begins
                await sse.end(timeout=30)
            refused = await client.get("/v1/events/stream")
            assert refused.status_code == 503 and refused.headers["retry-after"] == "1", refused.text
    finally:
        await asyncio.wait_for(server.stop(), 30)
