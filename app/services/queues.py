"""Queue controls: pause (not claimed from; enqueue still works), resume, overview."""

from __future__ import annotations

from app.db.database import Database
from app.db.executions import ExecutionRepository
from app.db.queues import QueueRepository
from app.domain.executions import QueueStatus


class QueueService:
    def __init__(self, db: Database, queues: QueueRepository | None = None,
                 executions: ExecutionRepository | None = None) -> None:
        self.db = db
        self.queues = queues or QueueRepository()
        self.executions = executions or ExecutionRepository()

    async def list(self) -> list[QueueStatus]:
        async with self.db.transaction() as conn:
            return await self.queues.overview(conn)

    async def set_paused(self, name: str, paused: bool) -> QueueStatus:
        async with self.db.transaction() as conn:
            await self.queues.set_paused(conn, name, paused)
            if not paused:
                await self.executions.notify(conn, self.db.notify_channel, name)  # claim it at once
            [status] = await self.queues.overview(conn, name)
        return status
