"""Event subscriptions: subscribers of the event feed, and the deliveries of events to them.

A delivery is tried at once, then again after 1 s, doubling to at most 10 minutes, until it is
acknowledged (2xx) or its deadline passes (JOBWIRE_EVENT_RETRY_SECONDS after it was written); a
destination the network policy refuses ends it at once. While a subscription fails (its last
answer was not a 2xx), one delivery at a time probes it on the same doubling backoff; a success
ends the failure. A subscription failing for JOBWIRE_EVENT_DISABLE_AFTER is disabled.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any
from uuid import UUID

from app.domain.events import Event
from app.domain.handler_secrets import HandlerSecret

FIRST_RETRY_SECONDS = 1.0
MAX_RETRY_SECONDS = 600.0
DELIVERY_TIMEOUT_SECONDS = 10.0  # one try, connect to the whole answer
MAX_ANSWER_BYTES = 65_536  # read, then ignored
DEFAULT_RETRY_SECONDS = 86_400.0
DEFAULT_DISABLE_AFTER = 5 * 86_400.0


def retry_delay(failures: int) -> float:
    """Seconds before the next try after `failures` failed tries in a row (1 s, doubling, ≤ 10 min)."""
    return min(FIRST_RETRY_SECONDS * 2 ** min(max(failures - 1, 0), 20), MAX_RETRY_SECONDS)


class SubscriptionState(StrEnum):
    ENABLED = "enabled"
    DISABLED = "disabled"  # failing for JOBWIRE_EVENT_DISABLE_AFTER; a PUT enables it again


class DeliveryStatus(StrEnum):
    PENDING = "pending"  # not tried yet
    FAILED = "failed"  # tried, to be tried again at next_try_at
    DELIVERED = "delivered"  # a 2xx answered
    DEAD = "dead"  # its deadline passed, or its destination is refused


OPEN = (DeliveryStatus.PENDING, DeliveryStatus.FAILED)


@dataclass(frozen=True, slots=True)
class SubscriptionSpec:
    url: str
    types: tuple[str, ...] | None = None  # None: every type
    queues: tuple[str, ...] | None = None  # None: every queue
    handlers: tuple[str, ...] | None = None  # None: every handler


@dataclass(frozen=True, slots=True)
class Subscription:
    name: str
    spec: SubscriptionSpec
    state: SubscriptionState
    created_at: datetime
    updated_at: datetime
    failing_since: datetime | None = None  # its last answer failed (None: healthy)
    failures: int = 0  # failed tries in a row
    retry_at: datetime | None = None  # the next probe while it fails
    last_error: str | None = None
    disabled_at: datetime | None = None
    backlog: int = 0  # deliveries not yet acknowledged nor dead
    secrets: tuple[HandlerSecret, ...] = ()  # those that still sign, newest first; never their values
    secret: str = field(repr=False, default="")  # on the subscription a create returns only (shown once)


@dataclass(frozen=True, slots=True)
class Delivery:
    id: int
    subscription: str
    event: Event
    execution_id: UUID
    status: DeliveryStatus
    tries: int
    created_at: datetime
    next_try_at: datetime | None  # open ones only
    last_try_at: datetime | None
    last_status: int | None  # the subscriber's HTTP status (None: no answer)
    last_error: str | None
    completed_at: datetime | None


@dataclass(frozen=True, slots=True)
class ClaimedDelivery:
    """A delivery a node is sending: the item, where, signed with which secrets (as stored)."""

    id: int
    subscription: str
    tries: int  # this try's number: the guard of its outcome
    url: str
    secrets: tuple[str, ...]
    item: dict[str, Any]  # {id, type, occurred_at, data}


@dataclass(frozen=True, slots=True)
class DeliveryOutcome:
    id: int
    tries: int
    delivered: bool
    status: int | None = None  # the answer's HTTP status
    error: str | None = None
    refused: bool = False  # the network policy refused the destination: dead at once
