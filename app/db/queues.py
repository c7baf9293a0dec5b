"""QueueRepository: pause flags and the per-queue overview."""

from __future__ import annotations

from app.db.database import Connection
from app.db.queries import load
from app.db.statements import execute, fetch
from app.domain.metrics import QueueDepth

Q = load("queues.sql")


class QueueRepository:
    async def set_paused(self, conn: Connection, name: str, paused: bool) -> None:
        await execute(conn, Q["queue_set_paused"], name=name, paused=paused)

    async def of_schedules(self, conn: Connection) -> list[str]:
        return [r["queue"] for r in await fetch(conn, Q["queues_of_schedules"])]

    async def depth(self, conn: Connection, name: str | None = None) -> list[QueueDepth]:
        """Every queue's live depth (or the one named, listed even when it has nothing)."""
        rows = await fetch(conn, Q["queues_depth"], name=name)
        return [
            QueueDepth(queue=m["queue"], paused=m["paused"], due=int(m["due"]), scheduled=int(m["scheduled"]),
                       processing=int(m["processing"]), dead_letter=int(m["dead_letter"]),
                       oldest_due_age_seconds=(float(m["oldest_due_age"]) if m["oldest_due_age"] is not None
                                               else None))
            for m in rows
        ]
