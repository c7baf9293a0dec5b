"""Event subscriptions as the API manages them: register or replace (the signing secret minted
once), show, list, delete, rotate secrets; their deliveries listed, one sent again, a window of
stored events sent again (recover). A key limited to queues manages the subscriptions of its
queues only: those whose queue filter lies within them."""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime
from uuid import UUID

from app.db.database import Database
from app.db.subscriptions import DeliveryRepository, SubscriptionRepository
from app.delivery.secret_cipher import PLAIN, SecretCipher
from app.domain.address_policy import ANY_NETWORK, NetworkPolicy
from app.domain.errors import Conflict, FieldError, Forbidden, NotFound, ValidationFailed
from app.domain.handler_secrets import NewHandlerSecret
from app.domain.handler_urls import destination_problem
from app.domain.access import limited_to, require_queue
from app.domain.signing import new_handler_secret
from app.domain.subscriptions import (
    DEFAULT_RETRY_SECONDS,
    Delivery,
    DeliveryStatus,
    Subscription,
    SubscriptionSpec,
)
from app.services import cursors
from app.services.signing_secrets import SecretRotation

RECOVER_BATCH = 1000
MAX_DELIVERY_PAGE = 1000


@dataclass(frozen=True, slots=True)
class DeliveryPage:
    items: list[Delivery]
    next_cursor: str | None  # None: this was the last page


def _delivery_cursor(cursor: str) -> int:
    """The delivery id a deliveries cursor holds; ValidationFailed naming `after` for anything else."""
    try:
        before = cursors.decode(cursor)["delivery"]
        if isinstance(before, int) and not isinstance(before, bool) and 0 < before < 2**63:
            return before
    except (ValueError, KeyError, TypeError):
        pass
    raise ValidationFailed([FieldError("after", "is not a cursor this listing returned")])


class SubscriptionService:
    def __init__(self, db: Database, cipher: SecretCipher = PLAIN, networks: NetworkPolicy = ANY_NETWORK,
                 retry_seconds: float = DEFAULT_RETRY_SECONDS) -> None:
        """networks: JOBWIRE_HANDLER_NETWORKS, which a URL's IP literal must satisfy (the delivery
        client judges every address it connects to); retry_seconds: JOBWIRE_EVENT_RETRY_SECONDS,
        the deadline of a delivery sent again."""
        self.db = db
        self.cipher = cipher
        self.networks = networks
        self.retry_seconds = retry_seconds
        self.subscriptions = SubscriptionRepository()
        self.deliveries = DeliveryRepository()
        self.rotation = SecretRotation(db, self.subscriptions.secrets, cipher, "subscriptions")

    async def put(self, name: str, spec: SubscriptionSpec, confine: frozenset[str] | None = None
                  ) -> tuple[Subscription, bool]:
        """The subscription and whether it was created; a created one carries its first signing
        secret in plain text (`secret`), shown in this response only."""
        problem = destination_problem(spec.url, self.networks)
        if problem is not None:
            raise ValidationFailed([FieldError("url", problem)])
        if confine is not None:
            if spec.queues is None:
                raise Forbidden(f"{limited_to(confine)}; a subscription without `queues` spans every queue")
            for queue in spec.queues:
                require_queue(confine, queue)
        secret = new_handler_secret()
        async with self.db.transaction() as conn:
            done = await self.subscriptions.upsert(conn, name, spec, self.cipher.seal(secret), confine)
        if done is None:
            assert confine is not None
            raise Forbidden(f"{limited_to(confine)}; subscription {name!r} exists and spans other queues")
        subscription, created = done
        return (replace(subscription, secret=secret) if created else subscription), created

    async def get(self, name: str, confine: frozenset[str] | None = None) -> Subscription:
        async with self.db.transaction() as conn:
            found = await self.subscriptions.get(conn, name, confine)
        if found is None:
            raise NotFound("subscription", name)
        return found

    async def list(self, confine: frozenset[str] | None = None) -> list[Subscription]:
        async with self.db.transaction() as conn:
            return await self.subscriptions.list(conn, confine)

    async def delete(self, name: str, confine: frozenset[str] | None = None) -> None:
        async with self.db.transaction() as conn:
            if not await self.subscriptions.delete(conn, name, confine):
                raise NotFound("subscription", name)

    async def add_secret(self, name: str, expire_others_after: float | None = None,
                         confine: frozenset[str] | None = None) -> NewHandlerSecret:
        await self.get(name, confine)
        return await self.rotation.add(name, expire_others_after)

    async def delete_secret(self, name: str, secret_id: UUID, confine: frozenset[str] | None = None) -> None:
        await self.get(name, confine)
        await self.rotation.delete(name, secret_id)

    async def list_deliveries(self, name: str, *, after: str | None, limit: int, status: DeliveryStatus | None,
                         confine: frozenset[str] | None = None) -> DeliveryPage:
        """A page of its deliveries, newest first, after the cursor."""
        before = _delivery_cursor(after) if after else None
        await self.get(name, confine)
        async with self.db.autocommit() as conn:
            items = await self.deliveries.page(conn, name, before, limit + 1, status)
        more = len(items) > limit
        items = items[:limit]
        return DeliveryPage(items, cursors.encode({"delivery": items[-1].id}) if more else None)

    async def resend(self, name: str, delivery_id: int, confine: frozenset[str] | None = None) -> Delivery:
        """Send the delivery again now, whatever its status, with a new deadline; Conflict while a
        node is sending it."""
        await self.get(name, confine)
        async with self.db.transaction() as conn:
            sent = await self.deliveries.resend(conn, name, delivery_id, self.retry_seconds)
            if sent is None:
                found = await self.deliveries.get(conn, name, delivery_id)
        if sent is not None:
            return sent
        if found is None:
            raise NotFound("delivery", f"{delivery_id} of subscription {name!r}")
        raise Conflict(f"delivery {delivery_id} is being sent now: ask again once it is answered")

    async def recover(self, name: str, since: datetime, until: datetime | None = None,
                      confine: frozenset[str] | None = None) -> int:
        """Send again every stored event of [since, until) (until: now) that the subscription
        wants, in batches of their own transactions; how many deliveries it opened."""
        await self.get(name, confine)
        sent, after = 0, (since, 0)
        while True:
            async with self.db.transaction() as conn:
                batch = await self.deliveries.recover(conn, name, since, until, after, RECOVER_BATCH,
                                                      self.retry_seconds)
            sent += batch.sent
            if batch.last is None or batch.scanned < RECOVER_BATCH:
                return sent
            until, after = batch.until, batch.last
