"""Event deliveries in the database (app/db/sql/subscriptions.sql), on separate connections:
the pump follows the feed from each subscription's position and takes only events committed after
the subscription was created, an open transaction's included once it commits; claims never hand
one delivery to two claimers, keep each execution's events in order, and probe a failing
subscription one delivery at a time; outcomes are guarded by the try; the housekeeping kills
deliveries past their deadline, disables a subscription failing too long and prunes old ones."""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections import Counter
from typing import Any

from app.db.database import Database
from app.db.subscriptions import SubscriptionRepository
from app.domain.subscriptions import ClaimedDelivery, DeliveryOutcome, SubscriptionSpec
from app.services.event_delivery import DeliveryConfig, EventDeliveryService
from tests.conftest import scalar, sql

EVENT = """INSERT INTO job_events (execution_id, event, type, attempt)
           VALUES (CAST(:id AS uuid), jsonb_build_object('execution_id', CAST(:id AS uuid),
                                                         'queue', CAST(:queue AS text), 'handler', 'h',
                                                         'new_state', 'CANCELLED'), :type, 0)
           RETURNING id"""


async def subscribe(db: Database, name: str = "s", **filters: Any) -> None:
    async with db.transaction() as conn:
        spec = SubscriptionSpec(url="http://127.0.0.1:9/e", **filters)
        assert await SubscriptionRepository().upsert(conn, name, spec, "whsec_" + "A" * 44, None)


async def event(db: Database, execution_id: uuid.UUID | None = None, queue: str = "default",
                type_: str = "execution.cancelled") -> int:
    rows = await sql(db, EVENT, id=execution_id or uuid.uuid4(), queue=queue, type=type_)
    return rows[0]["id"]


async def claim(db: Database, limit: int = 100) -> list[ClaimedDelivery]:
    return await EventDeliveryService(db).claim(limit)


def ok(d: ClaimedDelivery) -> DeliveryOutcome:
    return DeliveryOutcome(d.id, d.tries, True, 200)


def failed(d: ClaimedDelivery) -> DeliveryOutcome:
    return DeliveryOutcome(d.id, d.tries, False, 503, "HTTP 503")


async def test_a_subscription_gets_the_events_committed_after_it_an_open_transactions_once_it_commits(
        db: Database) -> None:
    await event(db)  # before the subscription: not its
    async with db.pool.acquire() as open_conn:
        transaction = open_conn.transaction()
        await transaction.start()
        pending = (await open_conn.fetchrow(EVENT.replace(":id", "$1").replace(":queue", "$2").replace(":type", "$3"),
                                            uuid.uuid4(), "default", "execution.cancelled"))["id"]
        await subscribe(db)
        after = await event(db)  # committed, but behind the open transaction in the feed
        service = EventDeliveryService(db)
        await service.pump()
        assert await scalar(db, "SELECT count(*) FROM job_event_deliveries") == 0  # the feed waits for it
        await transaction.commit()
    await service.pump()
    events = [r["event_id"] for r in await sql(db, "SELECT event_id FROM job_event_deliveries ORDER BY id")]
    assert sorted(events) == sorted([pending, after])  # the open one committed after the subscription
    await service.pump()
    assert await scalar(db, "SELECT count(*) FROM job_event_deliveries") == 2  # each once


async def test_the_pump_keeps_what_a_subscription_filters_for_and_moves_past_the_rest(db: Database) -> None:
    await subscribe(db, "billing", queues=("billing",), types=("execution.cancelled",))
    await subscribe(db, "everything")
    wanted = await event(db, queue="billing")
    await event(db, queue="other")
    await event(db, queue="billing", type_="execution.succeeded")
    await EventDeliveryService(db).pump()
    rows = await sql(db, "SELECT subscription, event_id FROM job_event_deliveries ORDER BY subscription, event_id")
    assert [(r["subscription"], r["event_id"]) for r in rows if r["subscription"] == "billing"] == [("billing", wanted)]
    assert sum(r["subscription"] == "everything" for r in rows) == 3
    positions = {r["name"]: r["pos_id"] for r in await sql(db, "SELECT name, pos_id FROM job_subscriptions")}
    assert positions["billing"] == positions["everything"]  # past the events it did not want too


async def test_an_executions_later_event_waits_until_the_earlier_one_is_acknowledged_or_dead(db: Database) -> None:
    await subscribe(db)
    execution = uuid.uuid4()
    first, second, third = [await event(db, execution) for _ in range(3)]
    other = await event(db)
    service = EventDeliveryService(db)
    await service.pump()
    claimed = await claim(db)
    assert sorted(d.item["id"] for d in claimed) == sorted([first, other])
    await service.record([failed(d) for d in claimed if d.item["id"] == first] + [ok(d) for d in claimed
                                                                                    if d.item["id"] == other])
    await sql(db, "UPDATE job_subscriptions SET failing_since = NULL, failures = 0, retry_at = NULL")
    await sql(db, "UPDATE job_event_deliveries SET next_try_at = now()")
    [again] = await claim(db)
    assert again.item["id"] == first  # the failed one first; the next waits for it
    await sql(db, "UPDATE job_event_deliveries SET status = 'dead', completed_at = now(), leased_until = NULL "
                  "WHERE event_id = :id", id=first)
    [nxt] = await claim(db)
    assert nxt.item["id"] == second
    await service.record([ok(nxt)])
    [last] = await claim(db)
    assert last.item["id"] == third


async def test_concurrent_claimers_never_share_a_delivery_nor_run_an_executions_events_together(
        db: Database) -> None:
    await subscribe(db)
    executions = [uuid.uuid4() for _ in range(40)]
    for _ in range(3):
        for execution in executions:
            await event(db, execution)
    service = EventDeliveryService(db)
    await service.pump()
    assert await scalar(db, "SELECT count(*) FROM job_event_deliveries") == 120
    sent: Counter[int] = Counter()
    while True:
        rounds = await asyncio.gather(*(claim(db, 7) for _ in range(8)))
        batch = [d for r in rounds for d in r]
        if not batch:
            break
        per_execution = Counter(d.item["data"]["execution_id"] for d in batch)
        assert max(per_execution.values()) == 1  # an execution's next event waits for the one in flight
        sent.update(d.id for d in batch)
        await service.record([ok(d) for d in batch])
    assert len(sent) == 120 and set(sent.values()) == {1}


async def test_a_failing_subscription_is_probed_by_one_delivery_at_a_time(db: Database) -> None:
    await subscribe(db)
    for _ in range(20):
        await event(db)
    service = EventDeliveryService(db)
    await service.pump()
    first = await claim(db, 5)
    await service.record([failed(d) for d in first])
    shown = await sql(db, "SELECT failures, failing_since IS NOT NULL AS failing FROM job_subscriptions")
    assert shown[0]["failing"] and shown[0]["failures"] == 1
    assert await claim(db) == []  # its probe is not due yet
    await sql(db, "UPDATE job_subscriptions SET retry_at = now()")
    probes = await asyncio.gather(*(claim(db) for _ in range(6)))
    assert sum(len(p) for p in probes) == 1  # one probe, whoever claims
    assert await claim(db) == []  # none while it is out
    [probe] = [d for p in probes for d in p]
    await service.record([ok(probe)])
    healthy = await claim(db)
    assert len(healthy) == 14  # answered: every due one again (the probe took one never tried; the 5 failed wait 1 s)


async def test_an_outcome_counts_only_for_the_try_that_holds_the_delivery(db: Database) -> None:
    await subscribe(db)
    await event(db)
    service = EventDeliveryService(db)
    await service.pump()
    [stale] = await claim(db)
    await sql(db, "UPDATE job_event_deliveries SET leased_until = now(), next_try_at = now()")  # its lease ran out
    [taken] = await claim(db)
    assert taken.tries == stale.tries + 1
    await service.record([failed(stale)])  # the first node's late answer changes nothing
    assert (await sql(db, "SELECT status, tries FROM job_event_deliveries"))[0]["status"] == "pending"
    await service.record([ok(taken)])
    assert (await sql(db, "SELECT status FROM job_event_deliveries"))[0]["status"] == "delivered"


async def test_housekeeping_kills_the_overdue_disables_the_long_failing_and_prunes_the_old(
        db: Database, caplog: Any) -> None:
    await subscribe(db, "down")
    await subscribe(db, "up")
    for _ in range(3):
        await event(db)
    service = EventDeliveryService(db, DeliveryConfig(retry_seconds=3600, disable_after=60, keep_delivered=10,
                                                      keep_dead=100))
    await service.pump()
    await sql(db, "UPDATE job_subscriptions SET failing_since = now() - interval '2 minutes', failures = 7, "
                  "retry_at = now() + interval '1 hour', last_error = 'HTTP 500' WHERE name = 'down'")
    await sql(db, "UPDATE job_event_deliveries SET deadline_at = now() - interval '1 second' "
                  "WHERE subscription = 'down'")
    await sql(db, "UPDATE job_event_deliveries SET status = 'delivered', completed_at = now() - interval '1 minute' "
                  "WHERE subscription = 'up' AND event_id = (SELECT min(event_id) FROM job_event_deliveries)")
    with caplog.at_level(logging.WARNING, logger="app.services.event_delivery"):
        await service.housekeeping()
    assert {r["name"]: r["state"] for r in await sql(db, "SELECT name, state FROM job_subscriptions")} == {
        "down": "disabled", "up": "enabled"}
    assert any("subscription down disabled" in r.getMessage() and r.levelno == logging.WARNING for r in caplog.records)
    statuses = Counter((r["subscription"], r["status"]) for r in await sql(
        db, "SELECT subscription, status FROM job_event_deliveries"))
    assert statuses == Counter({("down", "dead"): 3, ("up", "pending"): 2})  # the old delivered one pruned
    assert [d.subscription for d in await claim(db)] == ["up", "up"]  # a disabled subscription gets nothing
    await sql(db, "UPDATE job_event_deliveries SET status = 'delivered', completed_at = now() - interval '1 day'")
    keep = EventDeliveryService(db, DeliveryConfig(keep_delivered=0, keep_dead=0))
    await keep.housekeeping()
    assert await scalar(db, "SELECT count(*) FROM job_event_deliveries") == 5  # 0: kept forever
    await service.housekeeping()
    assert await scalar(db, "SELECT count(*) FROM job_event_deliveries") == 0
