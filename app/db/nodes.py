"""NodeRepository: heartbeats and who is alive (job_server_heartbeats)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from app.db.database import Connection
from app.db.queries import load
from app.db.statements import fetch, fetchrow, fetchval
from app.domain.nodes import Node

Q = load("nodes.sql")


class NodeRepository:
    async def heartbeat(self, conn: Connection, server_id: str, queues: Sequence[str] | None = None) -> datetime:
        """Write this node's heartbeat, with the queues it claims from (None: every queue); returns
        the database time it wrote."""
        return await fetchval(conn, Q["node_heartbeat"], server_id=server_id,
                              queues=None if queues is None else list(queues))

    async def now(self, conn: Connection) -> datetime:
        return await fetchval(conn, Q["db_now"])

    async def live(self, conn: Connection, timeout: float) -> list[Node]:
        rows = await fetch(conn, Q["nodes_live"], timeout=float(timeout))
        return [Node(**row) for row in rows]

    async def dead(self, conn: Connection, timeout: float, self_id: str) -> list[str]:
        rows = await fetch(conn, Q["nodes_dead"], timeout=float(timeout), self=self_id)
        return sorted(r[0] for r in rows)

    async def forget_if_idle(self, conn: Connection, server_id: str) -> bool:
        return await fetchrow(conn, Q["node_forget_if_idle"], server_id=server_id) is not None
