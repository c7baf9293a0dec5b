"""WaitRepository: the statements of app/db/sql/waits.sql (suspensions, resumptions, signals)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any
from uuid import UUID

from app.db.database import Connection
from app.db.queries import load
from app.db.statements import fetch, fetchrow, fetchval, json_param
from app.domain import states
from app.domain.waits import Signal, Suspend

Q = load("waits.sql")


class WaitRepository:
    async def suspensions(self, conn: Connection, execution_id: UUID, attempt: int) -> int | None:
        """How often the execution suspended (its row locked); None when it is not PROCESSING at
        `attempt` any more."""
        return await fetchval(conn, Q["execution_suspensions"], id=execution_id, attempt=attempt,
                              from_states=list(states.SUSPEND_FROM))

    async def suspend(self, conn: Connection, execution_id: UUID, attempt: int, spec: Suspend) -> str | None:
        """PROCESSING → WAITING with the wait stored; the execution's handler, or None when it no
        longer applies."""
        row = await fetchrow(conn, Q["execution_suspend"], id=execution_id, attempt=attempt,
                             from_states=list(states.SUSPEND_FROM), steps=json_param(dict(spec.steps)),
                             until=spec.until, timeout=spec.timeout_seconds,
                             signals=list(spec.signals) if spec.signals else None, children=spec.children)
        return None if row is None else row["handler"]

    async def resume(self, conn: Connection, ids: Sequence[UUID] | None, n: int = 500) -> list[str]:
        """Resumes those of `ids` whose wait is over (or, `ids` None, up to `n` whose time came);
        the queue of each resumed."""
        rows = await fetch(conn, Q["executions_resume"], ids=None if ids is None else list(ids), n=n)
        return [r["queue"] for r in rows]

    async def send(self, conn: Connection, execution_id: UUID, name: str, payload: Any) -> tuple[int, datetime] | None:
        row = await fetchrow(conn, Q["signal_send"], id=execution_id, name=name, payload=json_param(payload))
        return None if row is None else (row["id"], row["sent_at"])

    async def consumed(self, conn: Connection, signal_id: int) -> bool:
        return bool(await fetchval(conn, Q["signal_consumed"], id=signal_id))

    async def signals(self, conn: Connection, execution_id: UUID, after: int, limit: int) -> list[Signal]:
        rows = await fetch(conn, Q["signals_page"], id=execution_id, after=after, limit=limit)
        return [Signal(id=r["id"], execution_id=r["execution_id"], name=r["name"], payload=r["payload"],
                       sent_at=r["sent_at"], consumed_at=r["consumed_at"]) for r in rows]
