"""Signals (POST /v1/executions/{id}/signals/{name}): a durable mailbox per execution. A signal
sent before the wait that names it is kept and consumed by that wait; one the execution waits for
now resumes it at once (app/db/sql/waits.sql)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from uuid import UUID

import orjson

from app.db.database import Database
from app.db.executions import ExecutionRepository
from app.db.waits import WaitRepository
from app.domain.access import may_use
from app.domain.errors import Conflict, NotFound, PayloadTooLarge
from app.domain.waits import MAX_SIGNAL_PAYLOAD_BYTES, Signal
from app.services import cursors
from app.services.executions import decode_id_cursor
from app.services.retrying import retry_contention


@dataclass(frozen=True, slots=True)
class Sent:
    id: int
    woke: bool  # the execution waited for it: resumed now, the signal consumed


@dataclass(frozen=True, slots=True)
class SignalPage:
    items: list[Signal]
    next_cursor: str | None


class SignalService:
    def __init__(self, db: Database) -> None:
        self.db = db
        self.executions = ExecutionRepository()
        self.waits = WaitRepository()

    async def send(self, execution_id: UUID, name: str, payload: Any,
                   queues: frozenset[str] | None = None) -> Sent:
        size = len(orjson.dumps(payload))
        if size > MAX_SIGNAL_PAYLOAD_BYTES:
            raise PayloadTooLarge(field="payload", size=size, limit=MAX_SIGNAL_PAYLOAD_BYTES)

        async def once() -> Sent:
            async with self.db.transaction() as conn:
                current = await self.executions.get(conn, execution_id)
                if current is None or not may_use(queues, current.queue):
                    raise NotFound("execution", execution_id)
                sent = await self.waits.send(conn, execution_id, name, payload)
                if sent is None:
                    now = await self.executions.get(conn, execution_id)
                    if now is None:
                        raise NotFound("execution", execution_id)
                    raise Conflict(f"execution {execution_id} is {now.state.value}: a finished execution takes "
                                   "no signal")
                resumed = await self.waits.resume(conn, [execution_id])
                if resumed:
                    await self.executions.notify(conn, self.db.notify_channel, resumed[0])
                return Sent(id=sent[0], woke=bool(resumed) and await self.waits.consumed(conn, sent[0]))
        return await retry_contention(once)

    async def list(self, execution_id: UUID, limit: int, cursor: str | None,
                   queues: frozenset[str] | None = None) -> SignalPage:
        after = decode_id_cursor(cursor, "signal") if cursor else 0
        async with self.db.transaction() as conn:
            current = await self.executions.get(conn, execution_id)
            if current is None or not may_use(queues, current.queue):
                raise NotFound("execution", execution_id)
            rows = await self.waits.signals(conn, execution_id, after, limit + 1)
        items, more = rows[:limit], len(rows) > limit
        return SignalPage(items, cursors.encode({"signal": items[-1].id}) if more and items else None)
