"""GET /v1/events, the feed of every execution's typed transition events (issue 23, its first
slice): ordered by (writing transaction, id), served only below the oldest transaction still
running, so a client resuming from its stored cursor misses nothing, even an event whose
transaction committed after a later-numbered one; filters; a queue-limited key sees its queues."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from app.db.database import Database
from tests.conftest import RunningServer, problem_fields, register

NOWHERE = "http://127.0.0.1:9/jobs"
LATER = "2999-01-01T00:00:00Z"


@pytest.fixture
async def api(api_only_server: RunningServer, db: Database) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=api_only_server.url, timeout=30) as client:
        await register(client, "h", NOWHERE)
        yield client


async def cancelled(api: httpx.AsyncClient, **fields: Any) -> str:
    """A job enqueued for later and cancelled: one execution.cancelled event."""
    created = await api.post("/v1/jobs", json={"handler": "h", "run_at": LATER, **fields})
    assert created.status_code == 201, created.text
    execution_id = created.json()["id"]
    assert (await api.post(f"/v1/executions/{execution_id}/cancel")).status_code == 200
    return execution_id


async def feed(api: httpx.AsyncClient, **params: Any) -> dict[str, Any]:
    response = await api.get("/v1/events", params=params)
    assert response.status_code == 200, response.text
    return response.json()


async def test_the_feed_lists_every_typed_event_in_order_and_resumes_from_its_cursor(api):
    first = [await cancelled(api) for _ in range(3)]
    page = await feed(api, limit=2)
    assert [(e["type"], e["data"]["execution_id"]) for e in page["items"]] == [
        ("execution.cancelled", first[0]), ("execution.cancelled", first[1])]
    rest = await feed(api, after=page["next_cursor"])
    assert [e["data"]["execution_id"] for e in rest["items"]] == [first[2]]
    end = rest["next_cursor"]
    assert (await feed(api, after=end)) == {"items": [], "next_cursor": end}  # at the end: where to ask again
    later = await cancelled(api)
    assert [e["data"]["execution_id"] for e in (await feed(api, after=end))["items"]] == [later]
    item = page["items"][0]
    assert set(item) == {"id", "type", "occurred_at", "data"}
    by_execution = (await api.get(f"/v1/executions/{first[0]}/events")).json()["items"]
    assert by_execution == [item]  # the same item as the execution's own events


async def test_an_event_of_a_transaction_still_open_waits_and_nothing_behind_it_is_skipped(api, db):
    """A transaction that took its id first, then wrote its event last: the events committed after
    it are held back until it ends, then both are served in (transaction, id) order."""
    before = await cancelled(api)
    cursor = (await feed(api))["next_cursor"]
    pending = await api.post("/v1/jobs", json={"handler": "h", "run_at": LATER})
    pending_id = pending.json()["id"]
    async with db.transaction() as tx:
        await tx.execute("SELECT pg_current_xact_id()")  # the older transaction id
        after = await cancelled(api)  # commits in a younger transaction meanwhile
        assert (await feed(api, after=cursor))["items"] == []  # held: an older one still runs
        await tx.execute("UPDATE job_executions SET state = 'CANCELLED', completed_at = now() "
                         "WHERE id = $1", pending_id)
        await tx.execute("INSERT INTO job_events (execution_id, event, type) "
                         "SELECT CAST($1 AS uuid), event || jsonb_build_object('execution_id', $1), type "
                         "FROM job_events WHERE type = 'execution.cancelled' ORDER BY id LIMIT 1", pending_id)
    items = (await feed(api, after=cursor))["items"]
    assert [i["data"]["execution_id"] for i in items] == [pending_id, after]  # the older transaction's first
    assert before not in [i["data"]["execution_id"] for i in items]


async def test_the_feed_filters_by_type_queue_and_handler(api):
    await register(api, "other", NOWHERE)
    mail = await cancelled(api, queue="mail")
    other = await cancelled(api, handler="other")
    retried = await api.post(f"/v1/executions/{mail}/retry")
    assert retried.status_code == 200, retried.text
    assert [e["type"] for e in (await feed(api, queue="mail"))["items"]] == ["execution.cancelled",
                                                                             "execution.retried"]
    assert [e["data"]["execution_id"] for e in (await feed(api, handler="other"))["items"]] == [other]
    assert [e["type"] for e in (await feed(api, types="execution.retried"))["items"]] == ["execution.retried"]


@pytest.mark.parametrize("params, field", [
    ({"after": "nope"}, "after"),
    ({"types": "execution.exploded"}, "types"),
    ({"types": ","}, "types"),
    ({"limit": 0}, "limit"),
    ({"limit": 1001}, "limit"),
])
async def test_bad_parameters_are_refused_naming_them(api, params, field):
    assert problem_fields(await api.get("/v1/events", params=params), 422) == [field]
