"""GET /v1/events, the feed of every execution's typed transition events (issue 23, its first
slice): ordered by (writing transaction, id), served only below the oldest transaction still
running, so a client resuming from its stored cursor misses nothing, even an event whose
transaction committed after a later-numbered one; filters; a queue-limited key sees its queues."""

from __future__ import annotations

import uuid
from typing import Any

import httpx
import pytest

from app.db.executions import ExecutionRepository
from tests.api.conftest import NOWHERE, LATER
from tests.conftest import problem_fields, register

async def cancelled(h_api: httpx.AsyncClient, **fields: Any) -> str:
    """A job enqueued for later and cancelled: one execution.cancelled event."""
    created = await h_api.post("/v1/jobs", json={"handler": "h", "run_at": LATER, **fields})
    assert created.status_code == 201, created.text
    execution_id = created.json()["id"]
    assert (await h_api.post(f"/v1/executions/{execution_id}/cancel")).status_code == 200
    return execution_id


async def feed(h_api: httpx.AsyncClient, **params: Any) -> dict[str, Any]:
    response = await h_api.get("/v1/events", params=params)
    assert response.status_code == 200, response.text
    return response.json()


async def test_the_feed_lists_every_typed_event_in_order_and_resumes_from_its_cursor(h_api):
    first = [await cancelled(h_api) for _ in range(3)]
    page = await feed(h_api, limit=2)
    assert [(e["type"], e["data"]["execution_id"]) for e in page["items"]] == [
        ("execution.cancelled", first[0]), ("execution.cancelled", first[1])]
    rest = await feed(h_api, after=page["next_cursor"])
    assert [e["data"]["execution_id"] for e in rest["items"]] == [first[2]]
    end = rest["next_cursor"]
    assert (await feed(h_api, after=end)) == {"items": [], "next_cursor": end}  # at the end: where to ask again
    later = await cancelled(h_api)
    assert [e["data"]["execution_id"] for e in (await feed(h_api, after=end))["items"]] == [later]
    item = page["items"][0]
    assert set(item) == {"id", "type", "occurred_at", "data"}
    by_execution = (await h_api.get(f"/v1/executions/{first[0]}/events")).json()["items"]
    assert by_execution == [item]  # the same item as the execution's own events


async def test_an_event_of_a_transaction_still_open_waits_and_nothing_behind_it_is_skipped(h_api, db):
    """A transaction that took its id first, then wrote its event last: the events committed after
    it are held back until it ends, then both are served in (transaction, id) order."""
    before = await cancelled(h_api)
    cursor = (await feed(h_api))["next_cursor"]
    pending = await h_api.post("/v1/jobs", json={"handler": "h", "run_at": LATER})
    pending_id = pending.json()["id"]
    async with db.transaction() as tx:
        await tx.execute("SELECT pg_current_xact_id()")  # the older transaction id
        after = await cancelled(h_api)  # commits in a younger transaction meanwhile
        assert (await feed(h_api, after=cursor))["items"] == []  # held: an older one still runs
        # Its typed event, written last: the cancel's own statement (its insert wrote none: DESIGN §8).
        assert await ExecutionRepository().cancel(tx, uuid.UUID(pending_id)) is not None
    items = (await feed(h_api, after=cursor))["items"]
    assert [i["data"]["execution_id"] for i in items] == [pending_id, after]  # the older transaction's first
    assert before not in [i["data"]["execution_id"] for i in items]


async def test_the_feed_filters_by_type_queue_and_handler(h_api):
    await register(h_api, "other", NOWHERE)
    mail = await cancelled(h_api, queue="mail")
    other = await cancelled(h_api, handler="other")
    retried = await h_api.post(f"/v1/executions/{mail}/retry")
    assert retried.status_code == 200, retried.text
    assert [e["type"] for e in (await feed(h_api, queue="mail"))["items"]] == ["execution.cancelled",
                                                                             "execution.retried"]
    assert [e["data"]["execution_id"] for e in (await feed(h_api, handler="other"))["items"]] == [other]
    assert [e["type"] for e in (await feed(h_api, types="execution.retried"))["items"]] == ["execution.retried"]


@pytest.mark.parametrize("params, field", [
    ({"after": "nope"}, "after"),
    ({"types": "execution.exploded"}, "types"),
    ({"types": ","}, "types"),
    ({"limit": 0}, "limit"),
    ({"limit": 1001}, "limit"),
])
async def test_bad_parameters_are_refused_naming_them(h_api, params, field):
    assert problem_fields(await h_api.get("/v1/events", params=params), 422) == [field]
