"""QueueRepository: pause flags and the per-queue overview."""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncConnection

from app.db.queries import load
from app.domain.executions import QueueStatus
from app.domain.metrics import QueueDepth

Q = load("queues.sql")


class QueueRepository:
    async def set_paused(self, conn: AsyncConnection, name: str, paused: bool) -> None:
        await conn.execute(Q["queue_set_paused"], {"name": name, "paused": paused})

    async def overview(self, conn: AsyncConnection, name: str | None = None) -> list[QueueStatus]:
        rows = await conn.execute(Q["queues_overview"], {"name": name})
        return [
            QueueStatus(
                name=m["name"],
                paused=m["paused"],
                counts=dict(m["counts"]),
                oldest_claimable_age_seconds=(float(m["oldest_claimable_age_seconds"])
                                              if m["oldest_claimable_age_seconds"] is not None else None),
            )
            for m in (row._mapping for row in rows)
        ]

    async def depth(self, conn: AsyncConnection) -> list[QueueDepth]:
        rows = await conn.execute(Q["queues_depth"])
        return [
            QueueDepth(queue=m["queue"], paused=m["paused"], due=int(m["due"]), scheduled=int(m["scheduled"]),
                       processing=int(m["processing"]), dead_letter=int(m["dead_letter"]),
                       oldest_due_age_seconds=(float(m["oldest_due_age"]) if m["oldest_due_age"] is not None
                                               else None))
            for m in (row._mapping for row in rows)
        ]
