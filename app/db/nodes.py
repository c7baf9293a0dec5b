"""NodeRepository: heartbeats and who is alive (job_server_heartbeats)."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy.ext.asyncio import AsyncConnection

from app.db.queries import load
from app.domain.executions import Node

Q = load("nodes.sql")


class NodeRepository:
    async def heartbeat(self, conn: AsyncConnection, server_id: str) -> datetime:
        """Write this node's heartbeat; returns the database time it wrote."""
        return (await conn.execute(Q["node_heartbeat"], {"server_id": server_id})).scalar_one()

    async def now(self, conn: AsyncConnection) -> datetime:
        return (await conn.execute(Q["db_now"])).scalar_one()

    async def live(self, conn: AsyncConnection, timeout: float) -> list[Node]:
        rows = await conn.execute(Q["nodes_live"], {"timeout": float(timeout)})
        return [Node(**row._mapping) for row in rows]

    async def dead(self, conn: AsyncConnection, timeout: float, self_id: str) -> list[str]:
        rows = await conn.execute(Q["nodes_dead"], {"timeout": float(timeout), "self": self_id})
        return sorted(r[0] for r in rows)

    async def forget_if_idle(self, conn: AsyncConnection, server_id: str) -> bool:
        return (await conn.execute(Q["node_forget_if_idle"], {"server_id": server_id})).first() is not None
