"""DebounceRepository: job_debounce, the rows debounced enqueues of one handler and key take turns on."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any
from uuid import UUID

from app.db.database import Connection
from app.db.queries import load
from app.db.rows import execution_from
from app.db.statements import execute, fetchrow, json_param
from app.domain.executions import Execution

Q = load("debounce.sql")


@dataclass(frozen=True, slots=True)
class DebounceRun:
    execution_id: UUID | None  # the execution the enqueues go to
    execution_state: str | None  # None: no execution, or it is gone
    first_at: datetime | None  # the run's first enqueue
    until: datetime | None  # leading mode: enqueues are dropped until then
    now: datetime  # database time


class DebounceRepository:
    async def lock(self, conn: Connection, handler: str, key: str) -> DebounceRun | None:
        """The (handler, key) run, locked until commit; None when the handler does not exist."""
        await execute(conn, Q["debounce_make"], handler=handler, key=key)
        row = await fetchrow(conn, Q["debounce_read"], handler=handler, key=key)
        if row is None:
            return None
        return DebounceRun(execution_id=row["execution_id"], execution_state=row["state"], first_at=row["first_at"],
                           until=row["until"], now=row["now"])

    async def push(self, conn: Connection, execution_id: UUID, delay: float, until: datetime, payload: Any,
                   metadata: Any) -> Execution | None:
        """Trailing mode: the waiting execution takes the enqueue; None if it is no longer waiting."""
        row = await fetchrow(conn, Q["debounce_push"], id=execution_id, delay=delay, until=until,
                             payload=json_param(payload), metadata=json_param(metadata))
        return execution_from(row) if row else None

    async def extend(self, conn: Connection, handler: str, key: str, delay: float, cap: datetime) -> None:
        await execute(conn, Q["debounce_extend"], handler=handler, key=key, delay=delay, cap=cap)

    async def start(self, conn: Connection, handler: str, key: str, execution_id: UUID,
                    window: float | None) -> None:
        await execute(conn, Q["debounce_start"], handler=handler, key=key, id=execution_id, window=window)
