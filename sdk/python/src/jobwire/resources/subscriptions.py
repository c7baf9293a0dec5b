"""`client.subscriptions`: the subscribers of the event feed, their signing secrets, and their
deliveries (listed, sent again one at a time, or a whole window of events recovered)."""

from __future__ import annotations

import builtins
from collections.abc import AsyncIterator, Iterator
from datetime import datetime
from typing import Any, Unpack

from jobwire._protocol import Call, listed, nothing, paged, path
from jobwire.models import Delivery, HandlerSecret, Page, Subscription
from jobwire.resources._driver import AsyncDriver, Driver, share_docs
from jobwire.types import Id, SubscriptionOptions


def _names(value: Any) -> Any:
    """A filter as sent: a list (one name given as a string is a list of one)."""
    if value is None:
        return None
    return [value] if isinstance(value, str) else list(value)


def put_subscription(name: str, url: str, options: SubscriptionOptions) -> Call[Subscription]:
    body = {"url": url, **{k: _names(v) for k, v in options.items() if v is not None}}
    return Call("putSubscription", "PUT", path("subscriptions", name), Subscription.from_json, body=body, name=name)


def get_subscription(name: str) -> Call[Subscription]:
    return Call("getSubscription", "GET", path("subscriptions", name), Subscription.from_json, name=name)


def list_subscriptions() -> Call[list[Subscription]]:
    return Call("listSubscriptions", "GET", path("subscriptions"), listed(Subscription.from_json))


def delete_subscription(name: str) -> Call[None]:
    return Call("deleteSubscription", "DELETE", path("subscriptions", name), nothing, name=name)


def add_subscription_secret(name: str, expire_others_after_seconds: float | None) -> Call[HandlerSecret]:
    body: dict[str, Any] = {}
    if expire_others_after_seconds is not None:
        body["expire_others_after_seconds"] = expire_others_after_seconds
    return Call("addSubscriptionSecret", "POST", path("subscriptions", name, "secrets"), HandlerSecret.from_json,
                body=body, name=name)


def delete_subscription_secret(name: str, secret_id: Id) -> Call[None]:
    return Call("deleteSubscriptionSecret", "DELETE", path("subscriptions", name, "secrets", secret_id), nothing,
                name=name)


def list_deliveries(name: str, status: str | None, limit: int | None,
                    after: str | None = None) -> Call[Page[Delivery]]:
    return Call("listSubscriptionDeliveries", "GET", path("subscriptions", name, "deliveries"),
                paged(Delivery.from_json), params={"status": status, "limit": limit, "after": after}, name=name,
                cursor_param="after")


def resend_delivery(name: str, delivery_id: int) -> Call[Delivery]:
    return Call("resendDelivery", "POST", path("subscriptions", name, "deliveries", delivery_id, "resend"),
                Delivery.from_json, name=str(delivery_id))


def recover_subscription(name: str, since: datetime | str, until: datetime | str | None) -> Call[int]:
    body: dict[str, Any] = {"since": since}
    if until is not None:
        body["until"] = until
    return Call("recoverSubscription", "POST", path("subscriptions", name, "recover"),
                lambda answer: int(answer["recovered"]), body=body, name=name)


class Subscriptions:
    """`client.subscriptions`."""

    def __init__(self, driver: Driver) -> None:
        self._driver = driver

    def put(self, name: str, url: str, **options: Unpack[SubscriptionOptions]) -> Subscription:
        """Register (201) or replace (200) a subscriber: every event it wants (`types`, `queues`,
        `handlers`: lists that narrow it; None, every one) is POSTed to `url`, signed, at least
        once. A new one receives the events committed after its creation, and the answer carries
        its signing `secret` (`whsec_…`), shown this once; a replacement keeps its secrets and its
        place in the feed, and enables it again if it was disabled. Not sent again after a lost
        reply (`Unavailable.maybe_applied`): see its message."""
        return self._driver.run(put_subscription(name, url, options))

    def get(self, name: str) -> Subscription:
        """The subscription, with its state, failures and backlog, and its secrets' ids and expiry
        (never a secret)."""
        return self._driver.run(get_subscription(name))

    def list(self) -> builtins.list[Subscription]:
        """Every subscription (an API key limited to queues: those confined to its queues)."""
        return self._driver.run(list_subscriptions())

    def delete(self, name: str) -> None:
        """Remove a subscription with its secrets and deliveries: nothing more is sent to it."""
        return self._driver.run(delete_subscription(name))

    def add_secret(self, name: str, expire_others_after_seconds: float | None = None) -> HandlerSecret:
        """A new signing secret, for a rotation: each delivery carries one signature per active
        secret. Its `secret` is shown this once; the others expire after
        `expire_others_after_seconds` when given."""
        return self._driver.run(add_subscription_secret(name, expire_others_after_seconds))

    def delete_secret(self, name: str, secret_id: Id) -> None:
        """Retire a signing secret (409 for the last one that does not expire)."""
        return self._driver.run(delete_subscription_secret(name, secret_id))

    def deliveries(self, name: str, *, status: str | None = None, limit: int | None = None) -> Iterator[Delivery]:
        """The subscription's deliveries, newest first, following cursors to the end (`status`:
        `pending`, `failed`, `delivered` or `dead`; `limit` is the page size)."""
        return self._driver.iterate(list_deliveries(name, status, limit))

    def deliveries_page(self, name: str, after: str | None = None, *, status: str | None = None,
                        limit: int | None = None) -> Page[Delivery]:
        """One page of `deliveries`: pass its `next_cursor` back as `after` for the next (None on
        the last page)."""
        return self._driver.run(list_deliveries(name, status, limit, after))

    def resend(self, name: str, delivery_id: int) -> Delivery:
        """Send the delivery again now, whatever its status, with a new deadline and the same
        `webhook-id` → the delivery (409 while a node is sending it). Not sent again after a lost
        reply (`Unavailable.maybe_applied`): see its message."""
        return self._driver.run(resend_delivery(name, delivery_id))

    def recover(self, name: str, since: datetime | str, until: datetime | str | None = None) -> int:
        """Send again every stored event of [`since`, `until`) the subscription wants, delivered or
        not (`until` None: now; aware datetimes, or RFC 3339 text with a zone) → how many
        deliveries it opened. Retention removes events: older ones are gone."""
        return self._driver.run(recover_subscription(name, since, until))


class AsyncSubscriptions:
    """`client.subscriptions` of the asyncio client."""

    def __init__(self, driver: AsyncDriver) -> None:
        self._driver = driver

    async def put(self, name: str, url: str, **options: Unpack[SubscriptionOptions]) -> Subscription:
        return await self._driver.run(put_subscription(name, url, options))

    async def get(self, name: str) -> Subscription:
        return await self._driver.run(get_subscription(name))

    async def list(self) -> builtins.list[Subscription]:
        return await self._driver.run(list_subscriptions())

    async def delete(self, name: str) -> None:
        return await self._driver.run(delete_subscription(name))

    async def add_secret(self, name: str, expire_others_after_seconds: float | None = None) -> HandlerSecret:
        return await self._driver.run(add_subscription_secret(name, expire_others_after_seconds))

    async def delete_secret(self, name: str, secret_id: Id) -> None:
        return await self._driver.run(delete_subscription_secret(name, secret_id))

    def deliveries(self, name: str, *, status: str | None = None,
                   limit: int | None = None) -> AsyncIterator[Delivery]:
        return self._driver.iterate(list_deliveries(name, status, limit))

    async def deliveries_page(self, name: str, after: str | None = None, *, status: str | None = None,
                              limit: int | None = None) -> Page[Delivery]:
        return await self._driver.run(list_deliveries(name, status, limit, after))

    async def resend(self, name: str, delivery_id: int) -> Delivery:
        return await self._driver.run(resend_delivery(name, delivery_id))

    async def recover(self, name: str, since: datetime | str, until: datetime | str | None = None) -> int:
        return await self._driver.run(recover_subscription(name, since, until))


share_docs(AsyncSubscriptions, Subscriptions)
