"""Receiving an event delivery: the signature checked as a handler's dispatch is (one of the
subscription's secrets against one of the request's `v1,` signatures, signed within 5 minutes of
now), the body read as the feed's item, `jobwire.Event`.

No replay guard here, unlike the handler toolkit: a resend signs the same event anew, and the
callback is the subscriber's to make idempotent on the event's id in any case (at least once)."""

from __future__ import annotations

import asyncio
import inspect
import logging
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping

from jobwire._json import loads
from jobwire.handler._asgi import MAX_BODY_BYTES, Receive, Scope, Send, _read_body, _respond
from jobwire.handler._outcome import problem
from jobwire.handler._signature import BadSignature, secret_keys
from jobwire.handler._signature import verify as verify_signature
from jobwire.models import Event

log = logging.getLogger("jobwire.events")

OnEvent = Callable[[Event], Awaitable[None] | None]
OWNER = "subscription"


class NotAnEvent(ValueError):
    """A verified body that is not an event item (the text of the 400)."""


def read_event(body: bytes) -> Event:
    """The item `{id, type, occurred_at, data}` in `body`, as the typed `Event`."""
    try:
        item = loads(body)
    except ValueError as exc:
        raise NotAnEvent(f"the body is not JSON: {exc}") from exc
    try:
        return Event.from_json(item)
    except (KeyError, TypeError, ValueError) as exc:
        raise NotAnEvent(f"the body is not an event item {{id, type, occurred_at, data}}: {exc}") from exc


def verified(keys: tuple[bytes, ...], headers: Mapping[str, str], body: bytes, now: float) -> Event:
    """The event of a delivery whose signature verifies under one of `keys`, `headers` read with
    any case; BadSignature or NotAnEvent otherwise."""
    lowered = {name.lower(): value for name, value in headers.items()}
    verify_signature(keys, lowered, body, now, OWNER)
    return read_event(body)


def verify(body: bytes, headers: Mapping[str, str], secret: str | Iterable[str], *,
           now: float | None = None) -> Event:
    """The event of a delivery Jobwire sent, from the request's raw `body` (the bytes as
    received, before any JSON parsing) and its `headers` (any mapping, names in any case), for a
    web framework of your own (Flask, Django, aiohttp…).

    `secret`: the subscription's `whsec_…` secret, or several during a rotation (any of them may
    have signed it). Raises `BadSignature` when no signature verifies or the request was signed
    more than 5 minutes from `now` (default: the clock): answer 401. Raises `NotAnEvent` for a
    body that verifies but is not an event item (a newer format): answer 400. ValueError for a
    secret that is not `whsec_…`.

    Nothing is deduped: the same event may come again (its `webhook-id` header is `str(event.id)`,
    the same on every try, to every subscription)."""
    return verified(secret_keys(secret, OWNER), headers, body, time.time() if now is None else now)


class SubscriberApp:
    """An ASGI app (any ASGI server; mount it in Starlette or FastAPI) that receives event
    deliveries on every path: POST an event, anything else 405. See `subscriber`."""

    def __init__(self, on_event: OnEvent, secret: str | Iterable[str]) -> None:
        self._on_event = on_event
        self._keys = secret_keys(secret, OWNER)
        self._awaits = _is_async(on_event)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            await self._http(scope, receive, send)
        elif scope["type"] == "lifespan":
            await _lifespan(receive, send)
        elif scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1003})

    async def _http(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["method"] != "POST":
            await _respond(send, 405, problem(405, "Method not allowed", "a subscriber takes POST only"),
                           [(b"allow", b"POST")])
            return
        body = await _read_body(receive)
        if body is None:
            await _respond(send, 413, problem(413, "Too large", f"the body is over {MAX_BODY_BYTES} bytes"))
            return
        headers = {name.decode("latin-1"): value.decode("latin-1") for name, value in scope["headers"]}
        try:
            event = verified(self._keys, headers, body, time.time())
        except BadSignature as exc:
            await _respond(send, 401, problem(401, "Bad signature", str(exc)))
            return
        except NotAnEvent as exc:
            await _respond(send, 400, problem(400, "Not a Jobwire event", str(exc)))
            return
        try:
            # A plain function runs in a worker thread: a blocking one does not stall the server.
            result = self._on_event(event) if self._awaits else await asyncio.to_thread(self._on_event, event)
            if inspect.isawaitable(result):
                await result
        except Exception as exc:
            # Not acknowledged: Jobwire sends the event again (1 s, doubling to 10 minutes).
            log.exception("event %s (%s) not handled: %s: %s", event.id, event.type, type(exc).__name__, exc)
            await _respond(send, 500, problem(500, "Not handled", f"on_event raised {type(exc).__name__}"))
            return
        await _respond(send, 204, b"")


def _is_async(on_event: OnEvent) -> bool:
    # An object with `async def __call__` is awaited too.
    return inspect.iscoroutinefunction(on_event) or inspect.iscoroutinefunction(type(on_event).__call__)


async def _lifespan(receive: Receive, send: Send) -> None:
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            await send({"type": "lifespan.shutdown.complete"})
            return
