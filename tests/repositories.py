"""Shortcuts the tests take over ExecutionRepository: reads and writes the service only makes in
another form (the service's own methods stay the only ones in app/db)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any
from uuid import UUID

from app.db.database import Connection
from app.db.executions import ExecutionRepository
from app.db.queries import EXECUTION_COLUMNS
from app.db.rows import execution_from
from app.db.statements import fetch
from app.domain.executions import Execution, NewJob


class ShortcutRepository(ExecutionRepository):
    async def insert_many(self, conn: Connection, jobs: Sequence[NewJob]) -> list[Execution | None]:
        """As enqueue; per input position the new execution, or None where an idempotency key
        returned one stored before."""
        return [execution if created else None for execution, created in await self.enqueue(conn, jobs)]

    async def by_idempotency_keys(self, conn: Connection,
                                  keys: Sequence[str]) -> dict[str, tuple[Execution, str | None]]:
        """The executions holding these keys, each with its request's fingerprint."""
        rows = await fetch(conn, f"SELECT {', '.join(EXECUTION_COLUMNS)}, idempotency_key, request_hash "
                                 "FROM job_executions WHERE idempotency_key = ANY(:keys)", keys=list(keys))
        return {r["idempotency_key"]: (execution_from(r), r["request_hash"]) for r in rows}

    async def succeed_many(self, conn: Connection, items: Sequence[tuple[UUID, int, Any]], channel: str,
                           http_statuses: Sequence[int | None] | None = None) -> list[Execution]:
        """As succeed_attempts, the executions alone."""
        return [a.execution for a in await self.succeed_attempts(conn, items, channel, http_statuses)]

    async def abandon_held_by(self, conn: Connection, nodes: Sequence[str], n: int, *, error: str,
                              error_type: str, keep: Sequence[UUID] = ()) -> list[Execution]:
        """As abandon_attempts_held_by, the executions alone."""
        ended = await self.abandon_attempts_held_by(conn, nodes, n, error=error, error_type=error_type, keep=keep)
        return [a.execution for a in ended]

    async def abandon_past_deadline(self, conn: Connection, n: int, *, error: str,
                                    error_type: str) -> list[Execution]:
        """As abandon_attempts_past_deadline, the executions alone."""
        return [a.execution for a in await self.abandon_attempts_past_deadline(conn, n, error=error,
                                                                                error_type=error_type)]
