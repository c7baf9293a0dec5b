"""One event delivery's HTTP call: the item, signed per Standard Webhooks, and the answer as a
DeliveryOutcome. `webhook-id` is the event's id on every try and to every subscriber, so a
receiver dedupes on it; the body is the item GET /v1/events lists."""

from __future__ import annotations

import time
from collections.abc import Sequence

import orjson

from app.delivery.dispatch import USER_AGENT
from app.delivery.secret_cipher import PLAIN, SecretCipher
from app.delivery.transport import BlockedDestination, DeadlineExceeded, Transport, TransportError
from app.domain.jsontext import dumps
from app.domain.signing import sign_webhook
from app.domain.subscriptions import DELIVERY_TIMEOUT_SECONDS, ClaimedDelivery, DeliveryOutcome
from app.domain.text import error_text


def delivery_body(delivery: ClaimedDelivery) -> bytes:
    return dumps(delivery.item, option=orjson.OPT_UTC_Z)


def delivery_headers(secrets: Sequence[str], delivery: ClaimedDelivery, body: bytes,
                     now: float | None = None) -> dict[str, str]:
    msg_id = str(delivery.item["id"])
    timestamp = int(now if now is not None else time.time())
    return {
        "content-type": "application/json",
        "user-agent": USER_AGENT,
        "webhook-id": msg_id,
        "webhook-timestamp": str(timestamp),
        "webhook-signature": sign_webhook(secrets, msg_id, timestamp, body),
        "jobwire-subscription": delivery.subscription,
        "jobwire-event-type": str(delivery.item["type"]),
    }


async def deliver(transport: Transport, delivery: ClaimedDelivery, cipher: SecretCipher = PLAIN,
                  timeout: float = DELIVERY_TIMEOUT_SECONDS) -> DeliveryOutcome:
    """POST the item; any 2xx acknowledges it. Redirects are not followed (a 3xx is a failure);
    the answer's body is read up to the transport's cap and ignored."""
    def failed(error: str, status: int | None = None, refused: bool = False) -> DeliveryOutcome:
        return DeliveryOutcome(delivery.id, delivery.tries, False, status, error_text(error), refused)

    if not delivery.secrets:
        return failed("the subscription has no signing secret that is still active")
    body = delivery_body(delivery)
    secrets = [cipher.reveal(s, f"a signing secret of subscription {delivery.subscription!r}")
               for s in delivery.secrets]
    try:
        reply = await transport.post(delivery.url, body, delivery_headers(secrets, delivery, body), timeout)
    except BlockedDestination as exc:
        return failed(str(exc), refused=True)
    except DeadlineExceeded:
        return failed(f"no answer within {timeout:g} s")
    except TransportError as exc:
        return failed(f"no answer: {exc}")
    if 200 <= reply.status < 300:
        return DeliveryOutcome(delivery.id, delivery.tries, True, reply.status)
    return failed(f"HTTP {reply.status} {reply.reason}".rstrip(), reply.status)
