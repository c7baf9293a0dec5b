"""LogRepository: a handler's log entries (job_logs)."""

from __future__ import annotations

from collections.abc import Sequence
from uuid import UUID

import orjson
from sqlalchemy.ext.asyncio import AsyncConnection

from app.db.queries import load
from app.domain.logs import LogEntry, LogLevel, StoredLog

Q = load("logs.sql")


class LogRepository:
    async def append(self, conn: AsyncConnection, execution_id: UUID, attempt: int,
                     entries: Sequence[LogEntry]) -> int:
        """Store entries for the attempt, in order; returns how many."""
        if not entries:
            return 0
        document = orjson.dumps([
            {"level": e.level.value, "message": e.message,
             **({"logged_at": e.logged_at.isoformat()} if e.logged_at else {})}
            for e in entries
        ]).decode()
        result = await conn.execute(Q["logs_append"], {"execution_id": execution_id, "attempt": attempt,
                                                       "entries": document})
        return result.rowcount

    async def page(self, conn: AsyncConnection, execution_id: UUID, after: int, limit: int) -> list[StoredLog]:
        rows = await conn.execute(Q["logs_page"], {"execution_id": execution_id, "after": after, "limit": limit})
        return [StoredLog(id=m["id"], attempt=m["attempt"], level=LogLevel(m["level"]), message=m["message"],
                          logged_at=m["logged_at"]) for m in (r._mapping for r in rows)]
