"""Readiness: the database answers and its migrations are at this build's head."""

from __future__ import annotations

from app.db.database import Database
from app.db.migrate import current_revisions, head_revisions


class HealthService:
    def __init__(self, db: Database) -> None:
        self.db = db
        self.expected = head_revisions()

    async def readiness(self) -> tuple[bool, str]:
        try:
            current = await current_revisions(self.db.engine, self.db.schema)
        except Exception as exc:  # any failure to ask is "not ready", never a 500
            return False, f"database unreachable: {type(exc).__name__}"
        if current != self.expected:
            return False, f"migrations at {sorted(current) or 'none'}, expected {sorted(self.expected)}"
        return True, "ready"
