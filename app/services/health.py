"""Readiness: the database answers and its migrations are at this build's head, or at revisions of
a newer build (a rolling upgrade: a node of the previous version keeps serving)."""

from __future__ import annotations

from app.db.database import Database
from app.db.handlers import MetaRepository
from app.db.migrate import head_revisions, newer_than_this_build


class HealthService:
    def __init__(self, db: Database, meta: MetaRepository | None = None) -> None:
        self.db = db
        self.meta = meta or MetaRepository()
        self.expected = head_revisions()

    async def readiness(self) -> tuple[bool, str]:
        try:
            async with self.db.autocommit() as conn:
                current = await self.meta.migration_heads(conn)
        except Exception as exc:  # any failure to ask is "not ready", never a 500
            return False, f"database unreachable: {type(exc).__name__}"
        if current != self.expected and not newer_than_this_build(current):
            return False, f"migrations at {sorted(current) or 'none'}, expected {sorted(self.expected)}"
        return True, "ready"
