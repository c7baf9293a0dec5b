"""StepRepository: run-step-once results (job_steps), kept across an execution's attempts."""

from __future__ import annotations

from typing import Any
from uuid import UUID

from app.db.database import Connection
from app.db.queries import load
from app.db.statements import fetchrow
from app.domain.jsontext import dumps
from app.domain.steps import Step

Q = load("steps.sql")


def _step(m: Any) -> Step:
    return Step(name=m["name"], result=m["result"], completed_at=m["completed_at"])


class StepRepository:
    async def get(self, conn: Connection, execution_id: UUID, name: str) -> Step | None:
        row = await fetchrow(conn, Q["step_get"], execution_id=execution_id, name=name)
        return _step(row) if row else None

    async def insert_if_absent(self, conn: Connection, execution_id: UUID, name: str,
                               result: Any) -> Step | None:
        """The new step, or None when it was recorded before (the first result is kept)."""
        row = await fetchrow(conn, Q["step_insert_if_absent"], execution_id=execution_id, name=name,
                             result=dumps(result).decode())
        return _step(row) if row else None
