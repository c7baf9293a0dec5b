"""When ended executions free something a dispatcher may be waiting for, wake them all.

A node whose last claim came back short sleeps until a NOTIFY or its fallback poll. Work that
was held back becomes claimable when an execution leaves PROCESSING: the next stateful job of
its queue, or a job of a handler at its max_concurrency. One NOTIFY per transaction, delivered
on commit.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from app.db.database import Database
from app.db.executions import ExecutionRepository
from app.domain.executions import Execution
from app.domain.states import JobState


async def wake_for_freed_slots(db: Database, executions: ExecutionRepository, conn: Any,
                               ended: Sequence[Execution | None]) -> None:
    done = [e for e in ended if e is not None]
    if not done:
        return
    if any(e.stateful or e.state is JobState.ENQUEUED for e in done):
        await executions.notify(conn, db.notify_channel)
    else:
        await executions.notify_if_limited(conn, db.notify_channel, sorted({e.handler for e in done}))
