"""LogRepository: a handler's log entries (job_logs)."""

from __future__ import annotations

from collections.abc import Sequence
from uuid import UUID

from app.db.database import Connection
from app.db.queries import load
from app.db.statements import execute, fetch
from app.domain.jsontext import dumps
from app.domain.logs import LogEntry, LogLevel, StoredLog

Q = load("logs.sql")


class LogRepository:
    async def append(self, conn: Connection, execution_id: UUID, attempt: int,
                     entries: Sequence[LogEntry]) -> int:
        """Store entries for the attempt, in order; returns how many."""
        if not entries:
            return 0
        document = dumps([
            {"level": e.level.value, "message": e.message,
             **({"logged_at": e.logged_at.isoformat()} if e.logged_at else {})}
            for e in entries
        ]).decode()
        return await execute(conn, Q["logs_append"], execution_id=execution_id, attempt=attempt, entries=document)

    async def page(self, conn: Connection, execution_id: UUID, after: int, limit: int) -> list[StoredLog]:
        rows = await fetch(conn, Q["logs_page"], execution_id=execution_id, after=after, limit=limit)
        return [StoredLog(id=m["id"], attempt=m["attempt"], level=LogLevel(m["level"]), message=m["message"],
                          logged_at=m["logged_at"]) for m in rows]
