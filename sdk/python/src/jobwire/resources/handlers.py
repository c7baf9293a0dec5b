"""`client.handlers`: the HTTP services jobs are sent to, their signing secrets, and their
concurrency keys."""

from __future__ import annotations

import builtins
from collections.abc import AsyncIterator, Iterator
from typing import Any, Unpack

from jobwire._protocol import Call, listed, nothing, paged, path
from jobwire.models import AdaptiveLimit, ConcurrencyKey, Handler, HandlerBatch, HandlerSecret, Page, RateLimit
from jobwire.resources._driver import AsyncDriver, Driver, share_docs
from jobwire.types import HandlerOptions, Id


def _field(value: Any) -> Any:
    """An option as sent: a RateLimit as the API's `{limit, period_seconds}`; an AdaptiveLimit (a
    handler's `adaptive` as read: it is adaptive) as `adaptive: true`; a HandlerBatch as `{max_size,
    max_wait_ms}`."""
    if isinstance(value, RateLimit):
        return {"limit": value.limit, "period_seconds": value.period_seconds}
    if isinstance(value, HandlerBatch):
        return {"max_size": value.max_size, "max_wait_ms": value.max_wait_ms}
    if isinstance(value, AdaptiveLimit):
        return True
    return value


def put_handler(name: str, url: str, options: HandlerOptions) -> Call[Handler]:
    body = {"url": url, **{k: _field(v) for k, v in options.items() if v is not None}}
    return Call("putHandler", "PUT", path("handlers", name), Handler.from_json, body=body, name=name)


def get_handler(name: str) -> Call[Handler]:
    return Call("getHandler", "GET", path("handlers", name), Handler.from_json, name=name)


def list_handlers() -> Call[list[Handler]]:
    return Call("listHandlers", "GET", path("handlers"), listed(Handler.from_json))


def delete_handler(name: str) -> Call[None]:
    return Call("deleteHandler", "DELETE", path("handlers", name), nothing, name=name)


def add_handler_secret(name: str, expire_others_after_seconds: float | None) -> Call[HandlerSecret]:
    body: dict[str, Any] = {}
    if expire_others_after_seconds is not None:
        body["expire_others_after_seconds"] = expire_others_after_seconds
    return Call("addHandlerSecret", "POST", path("handlers", name, "secrets"), HandlerSecret.from_json, body=body,
                name=name)


def delete_handler_secret(name: str, secret_id: Id) -> Call[None]:
    return Call("deleteHandlerSecret", "DELETE", path("handlers", name, "secrets", secret_id), nothing, name=name)


def list_handler_keys(name: str, state: str | None, limit: int | None,
                      cursor: str | None = None) -> Call[Page[ConcurrencyKey]]:
    return Call("listHandlerKeys", "GET", path("handlers", name, "keys"), paged(ConcurrencyKey.from_json),
                params={"state": state, "limit": limit, "cursor": cursor}, name=name)


def pause_handler_key(name: str, key: str) -> Call[ConcurrencyKey]:
    return Call("pauseHandlerKey", "POST", path("handlers", name, "keys", key, "pause"), ConcurrencyKey.from_json,
                name=key)


def resume_handler_key(name: str, key: str) -> Call[ConcurrencyKey]:
    return Call("resumeHandlerKey", "POST", path("handlers", name, "keys", key, "resume"), ConcurrencyKey.from_json,
                name=key)


class Handlers:
    """`client.handlers`."""

    def __init__(self, driver: Driver) -> None:
        self._driver = driver

    def put(self, name: str, url: str, **options: Unpack[HandlerOptions]) -> Handler:
        """Register (201) or update (200) a handler (`timeout_seconds`, `max_concurrency`, `stateful`; flow
        control: `key_concurrency`, `rate_limit` and `key_rate_limit`, each a `RateLimit` or `{"limit": …,
        "period_seconds": …}`, and `adaptive`: True to adapt the calls in flight to what the handler takes,
        up to `max_concurrency`, which it needs; `batch`, a `HandlerBatch` or `{"max_size": …,
        "max_wait_ms": …}`: its due jobs sent together, up to max_size in one call). A handler's fields as
        read may be given back (`adaptive=handler.adaptive`, an AdaptiveLimit or None, is True or False).
        The PUT is the whole definition: an option left out takes its default again. A create's answer
        carries the signing `secret` (`whsec_…`), shown this once. Not sent again after a lost reply
        (`Unavailable.maybe_applied`): see its message."""
        return self._driver.run(put_handler(name, url, options))

    def get(self, name: str) -> Handler:
        """The handler, with its secrets' ids and expiry (never a secret)."""
        return self._driver.run(get_handler(name))

    def list(self) -> builtins.list[Handler]:
        """Every handler."""
        return self._driver.run(list_handlers())

    def delete(self, name: str) -> None:
        """Remove a handler (409 while ENQUEUED or PROCESSING executions or schedules use it)."""
        return self._driver.run(delete_handler(name))

    def add_secret(self, name: str, expire_others_after_seconds: float | None = None) -> HandlerSecret:
        """A new signing secret, for a rotation: Jobwire signs with every active one. Its `secret` is
        shown this once; the others expire after `expire_others_after_seconds` when given."""
        return self._driver.run(add_handler_secret(name, expire_others_after_seconds))

    def delete_secret(self, name: str, secret_id: Id) -> None:
        """Retire a signing secret (409 for the last one that does not expire)."""
        return self._driver.run(delete_handler_secret(name, secret_id))

    def keys(self, name: str, *, state: str | None = None, limit: int | None = None) -> Iterator[ConcurrencyKey]:
        """The handler's concurrency keys in key order, following `next_cursor` to the end: those
        with jobs ENQUEUED or PROCESSING, paused, or with a rate window open (`state`: `waiting`,
        `throttled` (held back now) or `paused`; `limit` is the page size, default 100, at most
        500). 403 for an API key limited to queues: a key holds jobs of every queue."""
        return self._driver.iterate(list_handler_keys(name, state, limit))

    def keys_page(self, name: str, cursor: str | None = None, *, state: str | None = None,
                  limit: int | None = None) -> Page[ConcurrencyKey]:
        """One page of `keys`: pass its `next_cursor` back as `cursor` for the next."""
        return self._driver.run(list_handler_keys(name, state, limit, cursor))

    def pause_key(self, name: str, key: str) -> ConcurrencyKey:
        """Hold the key's jobs (they stay ENQUEUED and spend no attempt) while the handler's other
        keys run; calls in flight finish. A key needs no jobs to be paused → the key."""
        return self._driver.run(pause_handler_key(name, key))

    def resume_key(self, name: str, key: str) -> ConcurrencyKey:
        """Let the key's jobs be claimed again → the key."""
        return self._driver.run(resume_handler_key(name, key))


class AsyncHandlers:
    """`client.handlers` of the asyncio client."""

    def __init__(self, driver: AsyncDriver) -> None:
        self._driver = driver

    async def put(self, name: str, url: str, **options: Unpack[HandlerOptions]) -> Handler:
        return await self._driver.run(put_handler(name, url, options))

    async def get(self, name: str) -> Handler:
        return await self._driver.run(get_handler(name))

    async def list(self) -> builtins.list[Handler]:
        return await self._driver.run(list_handlers())

    async def delete(self, name: str) -> None:
        return await self._driver.run(delete_handler(name))

    async def add_secret(self, name: str, expire_others_after_seconds: float | None = None) -> HandlerSecret:
        return await self._driver.run(add_handler_secret(name, expire_others_after_seconds))

    async def delete_secret(self, name: str, secret_id: Id) -> None:
        return await self._driver.run(delete_handler_secret(name, secret_id))

    def keys(self, name: str, *, state: str | None = None,
             limit: int | None = None) -> AsyncIterator[ConcurrencyKey]:
        return self._driver.iterate(list_handler_keys(name, state, limit))

    async def keys_page(self, name: str, cursor: str | None = None, *, state: str | None = None,
                        limit: int | None = None) -> Page[ConcurrencyKey]:
        return await self._driver.run(list_handler_keys(name, state, limit, cursor))

    async def pause_key(self, name: str, key: str) -> ConcurrencyKey:
        return await self._driver.run(pause_handler_key(name, key))

    async def resume_key(self, name: str, key: str) -> ConcurrencyKey:
        return await self._driver.run(resume_handler_key(name, key))


share_docs(AsyncHandlers, Handlers)
