"""Rows tell the truth: every success statement (a callback's executions_succeed, the dispatcher's
executions_succeed_quietly) clears the error an earlier attempt left on the row, the late success
over ABANDONED or over a DEAD_LETTER reached by abandoning included; the event rows keep each
attempt's own error."""

from __future__ import annotations

import uuid

import pytest

from app.db.database import Database
from app.db.executions import ExecutionRepository
from app.db.statements import fetch
from app.domain.executions import Execution
from app.domain.states import JobState
from tests.db.test_transitions import fail, get, handler, processing  # noqa: F401  (handler: a fixture)

pytestmark = pytest.mark.usefixtures("handler")  # registers handler h

repo = ExecutionRepository()
S = JobState


async def succeed(db: Database, execution_id: uuid.UUID, attempt: int, *, quietly: bool) -> Execution:
    async with db.transaction() as conn:
        if quietly:  # the dispatcher's synchronous successes
            assert await repo.succeed_quietly(conn, [(execution_id, attempt, "ok")], db.notify_channel, [200]) == 1
        else:  # completion callbacks
            [ended] = await repo.succeed_attempts(conn, [(execution_id, attempt, "ok")], db.notify_channel)
            assert ended.execution.state == S.SUCCEEDED
    return await get(db, execution_id)


async def errors_kept(db: Database, execution_id: uuid.UUID) -> list[tuple[str | None, str | None]]:
    async with db.transaction() as conn:
        rows = await fetch(conn, "SELECT type, error FROM job_events WHERE execution_id = :id AND type IS NOT NULL "
                                 "ORDER BY id", id=execution_id)
    return [(r["type"], r["error"]) for r in rows]


@pytest.mark.parametrize("quietly", [True, False], ids=["dispatcher", "callback"])
async def test_a_success_after_a_failed_attempt_clears_its_error(db: Database, quietly: bool) -> None:
    execution_id = await processing(db)
    again = await fail(db, execution_id, 0)
    assert again is not None and (again.state, again.error_type) == (S.ENQUEUED, "http_status")
    async with db.transaction() as conn:
        [_] = await repo.claim(conn, "node-1", 1, [], default_timeout=60.0)
    done = await succeed(db, execution_id, 1, quietly=quietly)
    assert (done.state, done.last_error, done.error_type) == (S.SUCCEEDED, None, None)
    assert await errors_kept(db, execution_id) == [
        ("execution.failed", "HTTP 500: boom"), ("execution.succeeded", None)]


@pytest.mark.parametrize("quietly", [True, False], ids=["dispatcher", "callback"])
async def test_a_late_success_over_abandoned_clears_the_abandonment(db: Database, quietly: bool) -> None:
    execution_id = await processing(db, cron=True)
    abandoned = await fail(db, execution_id, 0, cause=S.ABANDONED, error_type="abandoned_deadline")
    assert abandoned is not None and (abandoned.state, abandoned.error_type) == (S.ABANDONED, "abandoned_deadline")
    done = await succeed(db, execution_id, 0, quietly=quietly)
    assert (done.state, done.last_error, done.error_type) == (S.SUCCEEDED, None, None)


async def test_a_late_success_over_a_dead_letter_clears_the_abandonment(db: Database) -> None:
    execution_id = await processing(db, max_attempts=1)
    dead = await fail(db, execution_id, 0, cause=S.ABANDONED, error_type="abandoned_node")
    assert dead is not None and dead.state == S.DEAD_LETTER
    done = await succeed(db, execution_id, 0, quietly=False)
    assert (done.state, done.last_error, done.error_type) == (S.SUCCEEDED, None, None)
    assert [t for t, _ in await errors_kept(db, execution_id)] == [
        "execution.abandoned", "execution.dead_lettered", "execution.succeeded"]
