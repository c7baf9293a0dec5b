"""StepRepository: run-step-once results (job_steps), kept across an execution's attempts."""

from __future__ import annotations

from typing import Any
from uuid import UUID

import orjson
from sqlalchemy.ext.asyncio import AsyncConnection

from app.db.queries import load
from app.domain.steps import Step

Q = load("steps.sql")


def _step(row: Any) -> Step:
    m = row._mapping
    return Step(name=m["name"], result=m["result"], completed_at=m["completed_at"])


class StepRepository:
    async def get(self, conn: AsyncConnection, execution_id: UUID, name: str) -> Step | None:
        row = (await conn.execute(Q["step_get"], {"execution_id": execution_id, "name": name})).first()
        return _step(row) if row else None

    async def insert_if_absent(self, conn: AsyncConnection, execution_id: UUID, name: str,
                               result: Any) -> Step | None:
        """The new step, or None when it was recorded before (the first result is kept)."""
        row = (await conn.execute(Q["step_insert_if_absent"], {
            "execution_id": execution_id, "name": name, "result": orjson.dumps(result).decode()})).first()
        return _step(row) if row else None
