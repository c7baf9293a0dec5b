"""ApiKeyRepository (job_api_keys): keys stored as their SHA-256 hashes, with scopes and queues."""

from __future__ import annotations

import hmac
from collections.abc import Mapping, Sequence
from typing import Any
from uuid import UUID

from app.db.database import Connection
from app.db.queries import load
from app.db.statements import fetch, fetchrow, fetchval
from app.domain.access import ApiKey, Scope

Q = load("api_keys.sql")
_SCOPES = {s.value: s for s in Scope}


def api_key_from(m: Mapping[str, Any]) -> ApiKey:
    return ApiKey(id=m["id"], name=m["name"], scopes=tuple(_SCOPES[s] for s in m["scopes"]),
                  queues=None if m["queues"] is None else tuple(m["queues"]), created_at=m["created_at"])


class ApiKeyRepository:
    async def insert(self, conn: Connection, *, name: str, key_hash: str, scopes: Sequence[Scope],
                     queues: Sequence[str] | None) -> ApiKey:
        row = await fetchrow(conn, Q["api_key_insert"], name=name, key_hash=key_hash,
                             scopes=[s.value for s in scopes], queues=None if queues is None else list(queues))
        assert row is not None
        return api_key_from(row)

    async def by_hash(self, conn: Connection, key_hash: str) -> ApiKey | None:
        """The key whose hash is `key_hash`, looked up through the unique index; the stored hash is
        compared again in constant time (the lookup found it by equality already)."""
        row = await fetchrow(conn, Q["api_key_by_hash"], key_hash=key_hash)
        if row is None or not hmac.compare_digest(row["key_hash"].encode(), key_hash.encode()):
            return None
        return api_key_from(row)

    async def by_id(self, conn: Connection, key_id: UUID) -> ApiKey | None:
        row = await fetchrow(conn, Q["api_key_by_id"], id=key_id)
        return None if row is None else api_key_from(row)

    async def list(self, conn: Connection) -> list[ApiKey]:
        return [api_key_from(r) for r in await fetch(conn, Q["api_keys_list"])]

    async def any_exist(self, conn: Connection) -> bool:
        return bool(await fetchval(conn, Q["api_keys_exist"]))

    async def lock_for_delete(self, conn: Connection) -> None:
        """Until commit, no other delete of a key runs (see api_keys_lock)."""
        await fetchval(conn, Q["api_keys_lock"])

    async def delete(self, conn: Connection, key_id: UUID, *, keep_last: bool) -> bool:
        """Deletes the key unless `keep_last` and it is the last key or the last admin key; whether
        it did. Call after lock_for_delete, in the same transaction."""
        return await fetchval(conn, Q["api_key_delete"], id=key_id, keep_last=keep_last) is not None

    async def kept_because(self, conn: Connection, key_id: UUID) -> str | None:
        """Why delete kept the key: "last" or "last_admin"; None when there is no such key."""
        return await fetchval(conn, Q["api_key_kept_because"], id=key_id)
