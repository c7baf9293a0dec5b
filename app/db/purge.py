"""PurgeRepository: deleting executions on request (DELETE /v1/executions/{id}, bulk-delete).

Repositories never commit: the caller's unit of work owns the boundary.
"""

from __future__ import annotations

from collections.abc import Sequence
from uuid import UUID

from app.db.database import Connection
from app.db.queries import load
from app.db.subscriptions import DELIVER_DELETED
from app.db.statements import execute, fetch
from app.domain.states import PURGE_FROM

Q = load("purge.sql", deliver_deleted=DELIVER_DELETED)


class PurgeRepository:
    async def delete(self, conn: Connection, ids: Sequence[UUID]) -> list[UUID]:
        """Delete those of `ids` that are not ENQUEUED or PROCESSING, with their events; the ids deleted."""
        rows = await fetch(conn, Q["executions_delete"], ids=list(ids), from_states=list(PURGE_FROM))
        deleted = [r["id"] for r in rows]
        if deleted:
            await execute(conn, Q["executions_delete_events"], ids=deleted)
        return deleted
