"""What a node's event deliverer does in the database: pump the feed into deliveries, claim due
ones, record their outcomes, and the housekeeping (deliveries past their deadline dead,
subscriptions failing too long disabled, old deliveries pruned). Every node runs it; SKIP LOCKED
shares the work, no node is chosen."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass

from app.db.database import Database
from app.db.subscriptions import DeliveryRepository, Pumped
from app.domain.logfields import fields
from app.domain.subscriptions import (
    DEFAULT_DISABLE_AFTER,
    DEFAULT_RETRY_SECONDS,
    DELIVERY_TIMEOUT_SECONDS,
    ClaimedDelivery,
    DeliveryOutcome,
)

log = logging.getLogger(__name__)

PUMP_BATCH = 1000  # events a subscription takes per pump
LEASE_SECONDS = DELIVERY_TIMEOUT_SECONDS + 20  # a node that dies holding one: another sends it after this
HOUSEKEEPING_BATCH = 1000


@dataclass(frozen=True, slots=True)
class DeliveryConfig:
    retry_seconds: float = DEFAULT_RETRY_SECONDS  # JOBWIRE_EVENT_RETRY_SECONDS
    disable_after: float = DEFAULT_DISABLE_AFTER  # JOBWIRE_EVENT_DISABLE_AFTER
    keep_delivered: float = 7 * 86_400.0  # JOBWIRE_RETENTION_SUCCEEDED (0: forever)
    keep_dead: float = 30 * 86_400.0  # JOBWIRE_RETENTION_FAILED (0: forever)


class EventDeliveryService:
    def __init__(self, db: Database, config: DeliveryConfig = DeliveryConfig(),
                 deliveries: DeliveryRepository | None = None) -> None:
        self.db = db
        self.config = config
        self.deliveries = deliveries or DeliveryRepository()

    async def pump(self) -> Pumped:
        """Deliveries written for the events committed since each subscription's position."""
        async with self.db.transaction() as conn:
            return await self.deliveries.pump(conn, PUMP_BATCH, self.config.retry_seconds)

    async def claim(self, limit: int) -> list[ClaimedDelivery]:
        return await self.settle((), limit)

    async def record(self, outcomes: Sequence[DeliveryOutcome]) -> None:
        await self.settle(outcomes, 0)

    async def settle(self, outcomes: Sequence[DeliveryOutcome], claim: int) -> list[ClaimedDelivery]:
        """Record the outcomes of tries that ended, then claim up to `claim` due deliveries, in one
        transaction (the claim sees the outcomes: an execution's next event follows at once)."""
        if not outcomes and claim <= 0:
            return []
        changed: list[tuple[str, bool]] = []
        async with self.db.transaction() as conn:
            if outcomes:
                changed = await self.deliveries.record(conn, outcomes, self.config.retry_seconds)
            claimed = await self.deliveries.claim(conn, claim, LEASE_SECONDS) if claim > 0 else []
        for name, healthy in changed:
            if healthy:
                log.info("subscription %s answers again", name, extra=fields(subscription=name))
        return claimed

    async def housekeeping(self) -> None:
        """Open deliveries past their deadline dead; subscriptions failing for disable_after
        disabled (a WARNING each); delivered and dead deliveries past retention removed."""
        async with self.db.transaction() as conn:
            expired = await self.deliveries.expire(conn, HOUSEKEEPING_BATCH, self.config.retry_seconds)
            disabled = await self.deliveries.disable(conn, self.config.disable_after)
            pruned = await self.deliveries.prune(conn, self.config.keep_delivered, self.config.keep_dead,
                                                 HOUSEKEEPING_BATCH)
        for row in disabled:
            log.warning("subscription %s disabled: failing since %s (%s); PUT it to enable it again", row["name"],
                        row["failing_since"].isoformat(), row["last_error"] or "no error recorded",
                        extra=fields(subscription=row["name"], failing_since=row["failing_since"].isoformat(),
                                     error=row["last_error"]))
        if expired or pruned:
            log.info("event deliveries: %d past their deadline, %d pruned", expired, pruned,
                     extra=fields(expired=expired, pruned=pruned))
