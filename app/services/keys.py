"""A handler's concurrency keys: listed by state in keyset pages, paused and resumed one at a time
(the other keys' jobs go on). Keys need no registration and have no count cap."""

from __future__ import annotations

from app.db.database import Database
from app.db.executions import ExecutionRepository
from app.db.handlers import HandlerRepository
from app.db.keys import KeyRepository
from app.domain.errors import FieldError, NotFound, ValidationFailed
from app.domain.keys import KeyState, KeyStatus
from app.domain.names import is_valid_name
from app.services import cursors


def encode_cursor(key: str) -> str:
    return cursors.encode({"key": key})


def decode_cursor(cursor: str) -> str:
    """The key a page ended with; ValidationFailed naming `cursor` for text no page gave."""
    try:
        key = cursors.decode(cursor)["key"]
    except (ValueError, KeyError, TypeError):
        key = ""
    if not isinstance(key, str) or not is_valid_name(key):
        raise ValidationFailed([FieldError("cursor", "is not a cursor this listing returned")])
    return key


class KeyService:
    def __init__(self, db: Database, keys: KeyRepository | None = None,
                 executions: ExecutionRepository | None = None, handlers: HandlerRepository | None = None) -> None:
        self.db = db
        self.keys = keys or KeyRepository()
        self.executions = executions or ExecutionRepository()
        self.handlers = handlers or HandlerRepository()

    async def page(self, handler: str, state: KeyState | None = None, cursor: str | None = None,
                   limit: int = 100) -> tuple[list[KeyStatus], str | None]:
        """Up to `limit` keys in key order and the cursor of the next page (None: the last)."""
        after = decode_cursor(cursor) if cursor else ""
        async with self.db.transaction() as conn:
            if await self.handlers.get(conn, handler) is None:
                raise NotFound("handler", handler)
            found = await self.keys.page(conn, handler, state, after, limit + 1)
        more = len(found) > limit
        return found[:limit], encode_cursor(found[limit - 1].key) if more else None

    async def set_paused(self, handler: str, key: str, paused: bool) -> KeyStatus:
        async with self.db.transaction() as conn:
            if not await self.keys.set_paused(conn, handler, key, paused):
                raise NotFound("handler", handler)
            if not paused:
                await self.executions.notify(conn, self.db.notify_channel)  # claim its jobs at once
            return await self.keys.get(conn, handler, key)
