"""KeyRepository: a handler's concurrency keys (job_keys and the live jobs that carry keys)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from app.db.database import Connection
from app.db.queries import load
from app.db.statements import fetch, fetchval
from app.domain.keys import KeyState, KeyStatus

Q = load("keys.sql")


def _status(m: Mapping[str, Any]) -> KeyStatus:
    return KeyStatus(key=m["key"], waiting=int(m["waiting"]), in_flight=int(m["in_flight"]), paused=m["paused"],
                     rate_count=int(m["rate_count"]), rate_window_start=m["rate_window_start"],
                     rate_next_slot=m["rate_next"], retry_after=m["retry_after"])


class KeyRepository:
    async def page(self, conn: Connection, handler: str, state: KeyState | None, after: str,
                   limit: int) -> list[KeyStatus]:
        """Up to `limit` keys after `after` in key order, of `state` when given."""
        if state is KeyState.PAUSED:
            rows = await fetch(conn, Q["keys_page_paused"], handler=handler, after=after, limit=limit)
        elif state is None:
            rows = await fetch(conn, Q["keys_page"], handler=handler, after=after, limit=limit)
        else:
            rows = await fetch(conn, Q["keys_page_waiting"], handler=handler, after=after, limit=limit,
                               throttled=state is KeyState.THROTTLED)
        return [_status(r) for r in rows]

    async def get(self, conn: Connection, handler: str, key: str) -> KeyStatus:
        [row] = await fetch(conn, Q["key_get"], handler=handler, key=key)
        return _status(row)

    async def set_paused(self, conn: Connection, handler: str, key: str, paused: bool) -> bool:
        """False when there is no such handler."""
        return bool(await fetchval(conn, Q["key_set_paused"], handler=handler, key=key, paused=paused))
