"""DashboardRepository: what the dashboard's pages read that no API route does (app/ui)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from uuid import UUID

from app.db.database import Connection
from app.db.queries import load
from app.db.statements import fetch
from app.domain.dashboard import FailedAttempt, OutcomeCount, Relative
from app.domain.steps import Step

Q = load("dashboard.sql")


def _queues(queues: frozenset[str] | None) -> list[str] | None:
    return None if queues is None else sorted(queues)


class DashboardRepository:
    async def outcomes_per_minute(self, conn: Connection, minutes: int, since: datetime | None, types: Sequence[str],
                                  queues: frozenset[str] | None) -> tuple[datetime, list[OutcomeCount]]:
        """(the database's current minute, the counts by minute, handler and type from `since`
        (None: the last `minutes` minutes))."""
        rows = await fetch(conn, Q["dashboard_outcomes_per_minute"], minutes=minutes, since=since, types=list(types),
                           queues=_queues(queues))
        counts = [OutcomeCount(minute=r["minute"], handler=r["handler"], type=r["type"], count=int(r["n"]))
                  for r in rows if r["minute"] is not None]
        return rows[0]["now_minute"], counts

    async def recent_failures(self, conn: Connection, limit: int, types: Sequence[str],
                              queues: frozenset[str] | None) -> list[FailedAttempt]:
        rows = await fetch(conn, Q["dashboard_recent_failures"], limit=limit, types=list(types),
                           queues=_queues(queues))
        return [FailedAttempt(**dict(r)) for r in rows]

    async def in_flight_by_handler(self, conn: Connection, queues: frozenset[str] | None) -> dict[str, int]:
        rows = await fetch(conn, Q["dashboard_in_flight_by_handler"], queues=_queues(queues))
        return {r["handler"]: int(r["n"]) for r in rows}

    async def steps(self, conn: Connection, execution_id: UUID, limit: int) -> list[Step]:
        rows = await fetch(conn, Q["dashboard_steps"], id=execution_id, limit=limit)
        return [Step(name=r["name"], result=r["result"], completed_at=r["completed_at"]) for r in rows]

    async def parents(self, conn: Connection, execution_id: UUID, limit: int) -> list[Relative]:
        return [Relative(**dict(r)) for r in await fetch(conn, Q["dashboard_parents"], id=execution_id, limit=limit)]

    async def children(self, conn: Connection, execution_id: UUID, limit: int) -> list[Relative]:
        return [Relative(**dict(r)) for r in await fetch(conn, Q["dashboard_children"], id=execution_id, limit=limit)]
