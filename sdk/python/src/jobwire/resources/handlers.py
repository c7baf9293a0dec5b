"""`client.handlers`: the HTTP services jobs are sent to, and their signing secrets."""

from __future__ import annotations

import builtins
from typing import Any, Unpack

from jobwire._protocol import Call, listed, nothing, path
from jobwire.models import Handler, HandlerSecret
from jobwire.resources._driver import AsyncDriver, Driver, share_docs
from jobwire.types import HandlerOptions, Id


def put_handler(name: str, url: str, options: HandlerOptions) -> Call[Handler]:
    body = {"url": url, **{k: v for k, v in options.items() if v is not None}}
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


class Handlers:
    """`client.handlers`."""

    def __init__(self, driver: Driver) -> None:
        self._driver = driver

    def put(self, name: str, url: str, **options: Unpack[HandlerOptions]) -> Handler:
        """Register (201) or update (200) a handler (`timeout_seconds`, `max_concurrency`,
        `stateful`). A create's answer carries the signing `secret` (`whsec_…`), shown this once.
        Not sent again after a lost reply (`Unavailable.maybe_applied`): see its message."""
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


share_docs(AsyncHandlers, Handlers)
