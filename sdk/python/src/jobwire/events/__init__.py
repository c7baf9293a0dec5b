"""Receiving event deliveries: a subscription's events, each a signed POST of the item
`{id, type, occurred_at, data}` (`jobwire.Event`), verified and handed to a function of yours.

    from jobwire.events import subscriber

    async def on_event(event):
        if event.type == "execution.dead_lettered":
            await tell_someone(event.data.execution_id)

    app = subscriber(on_event, os.environ["JOBWIRE_SUBSCRIPTION_SECRET"])   # uvicorn module:app

In another web framework, `verify(body, headers, secret)` checks one request and returns its
event. Delivery is at least once: the same event may come again (a lost answer, a resend, a
recover), always with the same `webhook-id` header, `str(event.id)`. Neither deduplicates:
make what `on_event` does idempotent on `event.id`.
"""

from __future__ import annotations

from collections.abc import Iterable

from jobwire.events._subscriber import NotAnEvent, OnEvent, SubscriberApp, verify
from jobwire.handler._signature import BadSignature

__all__ = ["BadSignature", "NotAnEvent", "OnEvent", "SubscriberApp", "subscriber", "verify"]


def subscriber(on_event: OnEvent, secret: str | Iterable[str]) -> SubscriberApp:
    """An ASGI app calling `on_event(event)` for each event Jobwire delivers, on any path.

    `secret`: the subscription's `whsec_…` secret (the answer to the PUT that created it), or
    several during a rotation (a request is accepted when any of them signed it). A request with
    no valid signature, or signed more than 5 minutes away from now, gets a 401 and `on_event`
    does not run (Jobwire counts the try failed). `on_event` may be `async def` (awaited in the
    server's event loop) or a plain function (run in a worker thread). When it returns, the app
    answers 204 and the event is acknowledged; when it raises, the app answers 500 and logs the
    exception (logger `jobwire.events`), and Jobwire sends the event again after 1 s, doubling to
    10 minutes, for up to JOBWIRE_EVENT_RETRY_SECONDS. Answer within 10 s: a try that takes longer
    is failed by Jobwire and sent again; hand long work to a job.

    Nothing is deduplicated: an event acknowledged whose answer was lost, resent or recovered
    comes again with the same `event.id` (the `webhook-id` header)."""
    return SubscriberApp(on_event, secret)
