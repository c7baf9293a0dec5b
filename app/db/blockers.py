"""BlockerRepository: what holds an execution back, as the claim would see it."""

from __future__ import annotations

from uuid import UUID

from app.db.database import Connection
from app.db.queries import load
from app.db.statements import fetchrow
from app.domain.blockers import BlockerFacts

Q = load("blockers.sql")


class BlockerRepository:
    async def facts(self, conn: Connection, execution_id: UUID, heartbeat_timeout: float) -> BlockerFacts | None:
        """None when the execution does not exist."""
        row = await fetchrow(conn, Q["execution_blocker_facts"], id=execution_id, timeout=float(heartbeat_timeout))
        if row is None:
            return None
        ids = {k: None if row[k] is None else UUID(str(row[k])) for k in ("stateful_holder", "stateful_ahead")}
        return BlockerFacts(**{**row, **ids})
