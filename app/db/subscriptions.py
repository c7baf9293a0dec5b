"""SubscriptionRepository (job_subscriptions and their signing secrets) and DeliveryRepository
(job_event_deliveries): the statements of app/db/sql/subscriptions.sql."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from app.db.database import Connection
from app.db.queries import fragment, load
from app.db.signing_secrets import SUBSCRIPTION_SECRETS
from app.db.statements import fetch, fetchrow
from app.domain.events import Event, EventType
from app.domain.subscriptions import (
    ClaimedDelivery,
    Delivery,
    DeliveryOutcome,
    DeliveryStatus,
    FIRST_RETRY_SECONDS,
    MAX_RETRY_SECONDS,
    Subscription,
    SubscriptionSpec,
    SubscriptionState,
)

EVENT_DATA = fragment("events.sql", "event_data")
Q = load("subscriptions.sql", event_data=EVENT_DATA)
# For the statements that delete typed events: their deliveries, to the subscriptions that have not
# read them yet (a CTE `deleted_events` holds the rows going).
DELIVER_DELETED = fragment("subscriptions.sql", "deliver_deleted", event_data=EVENT_DATA)
LAST_ID = 2**63 - 1


def _tuple(value: Sequence[str] | None) -> tuple[str, ...] | None:
    return None if value is None else tuple(value)


def _list(value: Sequence[str] | None) -> list[str] | None:
    return None if value is None else list(value)


def subscription_from(m: Mapping[str, Any], secrets: Sequence[Any] = ()) -> Subscription:
    return Subscription(
        name=m["name"],
        spec=SubscriptionSpec(url=m["url"], types=_tuple(m["types"]), queues=_tuple(m["queues"]),
                              handlers=_tuple(m["handlers"])),
        state=SubscriptionState(m["state"]),
        created_at=m["created_at"],
        updated_at=m["updated_at"],
        failing_since=m["failing_since"],
        failures=m["failures"],
        retry_at=m["retry_at"],
        last_error=m["last_error"],
        disabled_at=m["disabled_at"],
        backlog=m["backlog"],
        secrets=tuple(secrets),
    )


def delivery_from(m: Mapping[str, Any]) -> Delivery:
    return Delivery(
        id=m["id"],
        subscription=m["subscription"],
        event=Event(id=m["event_id"], type=EventType(m["type"]), occurred_at=m["occurred_at"], data=m["data"]),
        execution_id=m["execution_id"],
        status=DeliveryStatus(m["status"]),
        tries=m["tries"],
        created_at=m["created_at"],
        next_try_at=m["next_try_at"],
        last_try_at=m["last_try_at"],
        last_status=m["last_status"],
        last_error=m["last_error"],
        completed_at=m["completed_at"],
    )


class SubscriptionRepository:
    secrets = SUBSCRIPTION_SECRETS  # its signing secrets

    async def upsert(self, conn: Connection, name: str, spec: SubscriptionSpec, new_secret: str,
                     confine: frozenset[str] | None) -> tuple[Subscription, bool] | None:
        """Insert or replace; the subscription and whether it was created. new_secret (as stored)
        becomes a created one's first signing secret. None: it exists and `confine` hides it."""
        row = await fetchrow(conn, Q["subscription_upsert"], name=name, url=spec.url, types=_list(spec.types),
                             queues=_list(spec.queues), handlers=_list(spec.handlers), secret=new_secret,
                             confine=_list(sorted(confine)) if confine is not None else None)
        if row is None:
            return None
        secrets = await self.secrets.of(conn, [name])
        return subscription_from(row, secrets.get(name, ())), bool(row["created"])

    async def get(self, conn: Connection, name: str, confine: frozenset[str] | None) -> Subscription | None:
        row = await fetchrow(conn, Q["subscription_get"], name=name, confine=_confine(confine))
        if row is None:
            return None
        return subscription_from(row, (await self.secrets.of(conn, [name])).get(name, ()))

    async def list(self, conn: Connection, confine: frozenset[str] | None) -> list[Subscription]:
        rows = await fetch(conn, Q["subscriptions_list"], confine=_confine(confine))
        secrets = await self.secrets.of(conn, [r["name"] for r in rows]) if rows else {}
        return [subscription_from(r, secrets.get(r["name"], ())) for r in rows]

    async def delete(self, conn: Connection, name: str, confine: frozenset[str] | None) -> bool:
        return await fetchrow(conn, Q["subscription_delete"], name=name, confine=_confine(confine)) is not None


def _confine(confine: frozenset[str] | None) -> list[str] | None:
    return None if confine is None else sorted(confine)


@dataclass(frozen=True, slots=True)
class Pumped:
    scanned: int  # events read past the positions
    written: int  # deliveries written
    subscriptions: int  # subscriptions this call pumped


@dataclass(frozen=True, slots=True)
class Recovered:
    until: datetime  # the window's end (:until, or the statement's now())
    scanned: int
    sent: int
    last: tuple[datetime, int] | None  # where the window's next batch starts


class DeliveryRepository:
    async def pump(self, conn: Connection, batch: int, retry_seconds: float) -> Pumped:
        row = await fetchrow(conn, Q["deliveries_pump"], batch=batch, retry_seconds=retry_seconds)
        assert row is not None
        return Pumped(row["scanned"], row["written"], row["subscriptions"])

    async def claim(self, conn: Connection, limit: int, lease: float) -> list[ClaimedDelivery]:
        rows = await fetch(conn, Q["deliveries_claim"], limit=limit, lease=lease)
        return [ClaimedDelivery(id=r["id"], subscription=r["subscription"], tries=r["tries"], url=r["url"],
                                secrets=tuple(r["secrets"] or ()),
                                item={"id": r["event_id"], "type": r["type"], "occurred_at": r["occurred_at"],
                                      "data": r["data"]})
                for r in rows]

    async def record(self, conn: Connection, outcomes: Sequence[DeliveryOutcome],
                     retry_seconds: float) -> list[tuple[str, bool]]:
        """The outcomes, in the order they ended; the subscriptions whose state they changed
        (name, healthy now)."""
        rows = await fetch(conn, Q["deliveries_record"], ids=[o.id for o in outcomes],
                           tries=[o.tries for o in outcomes], ok=[o.delivered for o in outcomes],
                           statuses=[o.status for o in outcomes],
                           errors=[o.error for o in outcomes], refused=[o.refused for o in outcomes],
                           first_delay=FIRST_RETRY_SECONDS, max_delay=MAX_RETRY_SECONDS, retry_seconds=retry_seconds)
        return [(r["name"], r["ok"]) for r in rows]

    async def expire(self, conn: Connection, limit: int, retry_seconds: float) -> int:
        return len(await fetch(conn, Q["deliveries_expire"], limit=limit, retry_seconds=retry_seconds))

    async def disable(self, conn: Connection, disable_after: float) -> list[Mapping[str, Any]]:
        return list(await fetch(conn, Q["subscriptions_disable"], disable_after=disable_after))

    async def prune(self, conn: Connection, delivered: float, dead: float, limit: int) -> int:
        return len(await fetch(conn, Q["deliveries_prune"], delivered=delivered, dead=dead, limit=limit))

    async def page(self, conn: Connection, name: str, before: int | None, limit: int,
                   status: DeliveryStatus | None) -> list[Delivery]:
        rows = await fetch(conn, Q["deliveries_page"], name=name, before=LAST_ID if before is None else before,
                           limit=limit, status=None if status is None else status.value)
        return [delivery_from(r) for r in rows]

    async def get(self, conn: Connection, name: str, delivery_id: int) -> tuple[Delivery, bool] | None:
        """The delivery and whether a node holds it now."""
        row = await fetchrow(conn, Q["delivery_get"], name=name, id=delivery_id)
        return None if row is None else (delivery_from(row), bool(row["leased"]))

    async def resend(self, conn: Connection, name: str, delivery_id: int, retry_seconds: float) -> Delivery | None:
        row = await fetchrow(conn, Q["delivery_resend"], name=name, id=delivery_id, retry_seconds=retry_seconds)
        return None if row is None else delivery_from(row)

    async def recover(self, conn: Connection, name: str, since: datetime, until: datetime | None,
                      after: tuple[datetime, int], limit: int, retry_seconds: float) -> Recovered:
        row = await fetchrow(conn, Q["deliveries_recover"], name=name, since=since, until=until, after_at=after[0],
                             after_id=after[1], limit=limit, retry_seconds=retry_seconds)
        assert row is not None
        last = (row["last_at"], row["last_id"]) if row["last_id"] is not None else None
        return Recovered(row["until"], row["scanned"], row["sent"], last)
