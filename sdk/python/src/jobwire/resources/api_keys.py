"""`client.api_keys`: the API keys stored in the database, with scopes and optional queues."""

from __future__ import annotations

import builtins
from collections.abc import Iterable

from jobwire._protocol import Call, listed, nothing, path
from jobwire.models import ApiKey
from jobwire.resources._driver import AsyncDriver, Driver, share_docs
from jobwire.types import Id


def create_api_key(name: str, scopes: Iterable[str], queues: Iterable[str] | None) -> Call[ApiKey]:
    body = {"name": name, "scopes": [*scopes], "queues": None if queues is None else [*queues]}
    return Call("createApiKey", "POST", path("api-keys"), ApiKey.from_json, body=body, name=name)


def list_api_keys() -> Call[list[ApiKey]]:
    return Call("listApiKeys", "GET", path("api-keys"), listed(ApiKey.from_json))


def delete_api_key(key_id: Id) -> Call[None]:
    return Call("deleteApiKey", "DELETE", path("api-keys", key_id), nothing, name=str(key_id))


class ApiKeys:
    """`client.api_keys`."""

    def __init__(self, driver: Driver) -> None:
        self._driver = driver

    def create(self, name: str, scopes: Iterable[str], queues: Iterable[str] | None = None) -> ApiKey:
        """A new key with `scopes` (`read`, `enqueue`, `operate`, `admin`), limited to `queues` when
        given. Its `key` is shown this once. Not sent again after a lost reply."""
        return self._driver.run(create_api_key(name, scopes, queues))

    def list(self) -> builtins.list[ApiKey]:
        """Every stored key (never the key itself)."""
        return self._driver.run(list_api_keys())

    def delete(self, key_id: Id) -> None:
        """Delete a key (409 for the last one, or the last with scope `admin`)."""
        return self._driver.run(delete_api_key(key_id))


class AsyncApiKeys:
    """`client.api_keys` of the asyncio client."""

    def __init__(self, driver: AsyncDriver) -> None:
        self._driver = driver

    async def create(self, name: str, scopes: Iterable[str], queues: Iterable[str] | None = None) -> ApiKey:
        return await self._driver.run(create_api_key(name, scopes, queues))

    async def list(self) -> builtins.list[ApiKey]:
        return await self._driver.run(list_api_keys())

    async def delete(self, key_id: Id) -> None:
        return await self._driver.run(delete_api_key(key_id))


share_docs(AsyncApiKeys, ApiKeys)
