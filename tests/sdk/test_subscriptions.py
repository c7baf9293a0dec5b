"""`client.subscriptions`, the SDK's side of /v1/subscriptions, against a real node (API,
dispatcher and deliverer) with both clients: a subscription put, read, listed, replaced and
deleted; its secrets rotated; the deliveries of real events to a real receiver listed page by
page and followed to the end, one resent with the same webhook-id, a window recovered."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from aiohttp import web

from jobwire import Delivery, Event, HandlerSecret, Page, ProblemError, Subscription
from tests.conftest import HandlerServer
from tests.sdk.conftest import Live

LATER = "2999-01-01T00:00:00Z"


async def acknowledge(_: web.Request, __: dict[str, Any]) -> web.StreamResponse:
    return web.Response(status=204)


def deliveries_to(handler: HandlerServer, name: str) -> list[dict[str, Any]]:
    """What the receiver got for subscription `name`: each request's webhook-id and body."""
    return [{"id": headers["webhook-id"], "body": body} for headers, body in zip(handler.headers, handler.received,
                                                                                   strict=True)
            if headers.get("jobwire-subscription") == name]


async def received(handler: HandlerServer, name: str, count: int, timeout: float = 15.0) -> list[dict[str, Any]]:
    for _ in range(int(timeout / 0.05)):
        if len(got := deliveries_to(handler, name)) >= count:
            return got
        await asyncio.sleep(0.05)
    raise AssertionError(f"{name}: {len(deliveries_to(handler, name))} deliveries received, expected {count}")


async def settled(client: Any, name: str, count: int, timeout: float = 15.0) -> list[Delivery]:
    """The subscription's deliveries once `count` of them are delivered."""
    found: list[Delivery] = []
    for _ in range(int(timeout / 0.05)):
        found = await client.subscriptions.deliveries(name)
        if len(found) >= count and all(d.status == "delivered" for d in found):
            return found
        await asyncio.sleep(0.05)
    raise AssertionError(f"{name}: deliveries not all delivered: {[(d.id, d.status) for d in found]}")


async def test_put_get_list_replace_and_delete(live: Live, client: Any) -> None:
    url = live.handler.route("/audit", acknowledge)
    created = await client.subscriptions.put("audit", url, types=["execution.dead_lettered", "execution.failed"],
                                             queues="mail")
    assert isinstance(created, Subscription) and created.secret and created.secret.startswith("whsec_")
    assert (created.url, created.types, created.queues, created.handlers) == (
        url, ["execution.dead_lettered", "execution.failed"], ["mail"], None)  # one queue given as a string
    assert (created.state, created.failing_since, created.backlog) == ("enabled", None, 0)
    assert created.created_at.tzinfo is not None and len(created.secrets) == 1

    read = await client.subscriptions.get("audit")
    assert read.secret is None and read.secrets == created.secrets  # never the secret again
    assert [s.name for s in await client.subscriptions.list()] == ["audit"]

    replaced = await client.subscriptions.put("audit", url, handlers=["echo"])
    assert replaced.secret is None and replaced.secrets == created.secrets  # its secrets kept
    assert (replaced.types, replaced.queues, replaced.handlers) == (None, None, ["echo"])  # the whole definition

    with pytest.raises(ProblemError) as refused:
        await client.subscriptions.put("audit", url, types=["execution.exploded"])
    assert refused.value.status == 422 and refused.value.fields[0].startswith("types")

    assert await client.subscriptions.delete("audit") is None
    with pytest.raises(ProblemError) as gone:
        await client.subscriptions.get("audit")
    assert gone.value.status == 404
    assert await client.subscriptions.list() == []


async def test_secrets_rotate_as_a_handlers_do(live: Live, client: Any) -> None:
    first = (await client.subscriptions.put("audit", live.handler.route("/audit", acknowledge))).secrets[0]
    added = await client.subscriptions.add_secret("audit", expire_others_after_seconds=3600)
    assert isinstance(added, HandlerSecret) and added.secret and added.secret.startswith("whsec_")
    secrets = (await client.subscriptions.get("audit")).secrets
    assert [s.id for s in secrets] == [added.id, first.id]  # newest first
    assert secrets[1].expires_at is not None and secrets[0].expires_at is None
    assert await client.subscriptions.delete_secret("audit", first.id) is None
    assert [s.id for s in (await client.subscriptions.get("audit")).secrets] == [added.id]
    with pytest.raises(ProblemError) as last:
        await client.subscriptions.delete_secret("audit", added.id)
    assert last.value.status == 409


async def test_deliveries_are_listed_by_page_and_to_the_end_resent_and_recovered(live: Live, client: Any) -> None:
    await client.subscriptions.put("audit", live.handler.route("/audit", acknowledge),
                                   types=["execution.succeeded"])
    before = datetime.now(UTC) - timedelta(seconds=5)
    ran = [await client.jobs.enqueue("echo", {"n": n}) for n in range(3)]
    for execution in ran:
        await client.executions.wait(execution.id, timeout=30)
    await received(live.handler, "audit", 3)

    every = await settled(client, "audit", 3)
    assert all(isinstance(d, Delivery) and isinstance(d.event, Event) for d in every)
    assert [d.id for d in every] == sorted((d.id for d in every), reverse=True)  # newest first
    assert {d.execution_id for d in every} == {e.id for e in ran}
    assert {(d.event.type, d.tries, d.last_status, d.next_try_at) for d in every} == {
        ("execution.succeeded", 1, 204, None)}
    assert all(d.event.data.execution_id == d.execution_id and d.completed_at is not None for d in every)

    first = await client.subscriptions.deliveries_page("audit", limit=2)
    assert isinstance(first, Page) and [d.id for d in first.items] == [d.id for d in every[:2]]
    rest = await client.subscriptions.deliveries_page("audit", first.next_cursor, limit=2)
    assert ([d.id for d in rest.items], rest.next_cursor) == ([every[2].id], None)
    assert [d.id for d in await client.subscriptions.deliveries("audit", limit=1)] == [d.id for d in every]
    assert await client.subscriptions.deliveries("audit", status="dead") == []

    # Resend: the same event again, with its webhook-id.
    resent = await client.subscriptions.resend("audit", every[-1].id)
    assert isinstance(resent, Delivery) and resent.completed_at is None and resent.next_try_at is not None
    again = (await received(live.handler, "audit", 4))[-1]
    assert again["id"] == str(every[-1].event.id) and again["body"]["id"] == every[-1].event.id
    await settled(client, "audit", 3)  # a delivery a node holds is not recovered: let the resend end

    # Recover: every stored event of the window the subscription wants, delivered or not.
    assert await client.subscriptions.recover("audit", before) == 3
    got = await received(live.handler, "audit", 7)
    assert sorted(r["id"] for r in got[4:]) == sorted(str(d.event.id) for d in every)
    assert await client.subscriptions.recover("audit", before, before + timedelta(seconds=1)) == 0
    with pytest.raises(ProblemError) as backwards:
        await client.subscriptions.recover("audit", datetime.now(UTC), before)
    assert backwards.value.status == 422 and backwards.value.fields == ["until"]
    with pytest.raises(ProblemError) as unknown:
        await client.subscriptions.resend("audit", 2**62)
    assert unknown.value.status == 404


async def test_a_subscription_that_fails_shows_it(live: Live, client: Any) -> None:
    async def refuse(_: web.Request, __: dict[str, Any]) -> web.StreamResponse:
        return web.Response(status=503, text="down")

    await client.subscriptions.put("down", live.handler.route("/down", refuse))
    execution = await client.jobs.enqueue("echo", run_at=LATER)
    await client.executions.cancel(execution.id)
    await received(live.handler, "down", 1)
    for _ in range(300):
        shown = await client.subscriptions.get("down")
        if shown.failing_since is not None:
            break
        await asyncio.sleep(0.05)
    assert shown.failing_since is not None and shown.failures >= 1 and shown.backlog == 1
    assert "503" in (shown.last_error or "")
    [failed] = await client.subscriptions.deliveries("down", status="failed")
    assert (failed.last_status, failed.event.type) == (503, "execution.cancelled") and failed.tries >= 1
    assert failed.next_try_at is not None
