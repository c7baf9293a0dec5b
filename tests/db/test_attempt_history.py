"""The attempt history's columns of job_events (revision 20261201_0010), written by the statements
that record an attempt's outcome or a user's action, and the attempts and typed events read from
them: which statement writes which type, the attempt it ends, its start, node, HTTP status and
error text; the rows of re-enqueues stay untyped, and inserts and claims write none (DESIGN §8)."""

from __future__ import annotations

import logging
import uuid
from typing import Any

import pytest

from app.db.database import Database
from tests.repositories import ShortcutRepository
from app.db.handlers import HandlerRepository
from app.db.statements import execute, fetch
from app.domain.attempts import Attempt
from app.domain.events import EventType
from app.domain.executions import NewJob
from app.domain.signing import new_handler_secret
from app.domain.states import JobState
from app.services.enqueue import EnqueueLimits, EnqueueService
from tests.conftest import settled_scanner

repo = ShortcutRepository()
S = JobState
COLUMNS = ("type", "attempt", "started_at", "node", "http_status", "error")


@pytest.fixture
async def handler(db: Database) -> str:
    async with db.transaction() as conn:
        await HandlerRepository().upsert(conn, name="h", url="http://127.0.0.1:9/h", timeout_seconds=None,
                                         max_concurrency=None, stateful=False, new_secret=new_handler_secret())
    return "h"


async def enqueued(db: Database, **kw: Any) -> uuid.UUID:
    service = EnqueueService(db, EnqueueLimits(max_payload_bytes=1_048_576))
    [done] = await service.enqueue([NewJob(handler="h", job_id="j", **kw)])
    return done.execution.id


async def claim(db: Database, node: str = "node-1") -> uuid.UUID:
    async with db.transaction() as conn:
        [claimed] = await repo.claim(conn, node, 1, [], default_timeout=60.0)
    return claimed.id


async def processing(db: Database, node: str = "node-1", **kw: Any) -> uuid.UUID:
    execution_id = await enqueued(db, **kw)
    assert await claim(db, node) == execution_id
    return execution_id


async def rows(db: Database, execution_id: uuid.UUID) -> list[dict[str, Any]]:
    """Every event row: its state and the attempt-history columns."""
    async with db.transaction() as conn:
        found = await fetch(conn, f"SELECT event->>'new_state' AS new_state, {', '.join(COLUMNS)} "
                                  "FROM job_events WHERE execution_id = :id ORDER BY id", id=execution_id)
    return [dict(r) for r in found]


async def attempts(db: Database, execution_id: uuid.UUID) -> list[Attempt]:
    async with db.transaction() as conn:
        return await repo.attempts(conn, execution_id)


async def event_types(db: Database, execution_id: uuid.UUID) -> list[str]:
    async with db.transaction() as conn:
        return [e.type.value for e in await repo.event_page(conn, execution_id, 0, 100)]


async def fail(db: Database, execution_id: uuid.UUID, attempt: int, *, cause: JobState = S.FAILED,
               error: str = "HTTP 500 Internal Server Error: boom", error_type: str = "http_status",
               http_status: int | None = 500, retryable: bool = True) -> None:
    async with db.transaction() as conn:
        assert await repo.fail(conn, execution_id, attempt, cause=cause, error=error, error_type=error_type,
                               retryable=retryable, delay=0.0, http_status=http_status) is not None


async def succeed(db: Database, execution_id: uuid.UUID, attempt: int, status: int | None) -> None:
    async with db.transaction() as conn:
        [_] = await repo.succeed_many(conn, [(execution_id, attempt, {"ok": True})], db.notify_channel, [status])


async def started(db: Database, execution_id: uuid.UUID) -> Any:
    async with db.transaction() as conn:
        execution = await repo.get(conn, execution_id)
    assert execution is not None
    return execution.started_at


def untyped(row: dict[str, Any]) -> bool:
    return all(row[c] is None for c in COLUMNS)


async def test_inserts_and_claims_write_no_rows(db: Database, handler: str) -> None:
    # DESIGN §8: the insert and the claim need no row of their own; the live row shows the attempt
    # in flight, and its outcome's row carries its start and node.
    execution_id = await enqueued(db)
    assert await rows(db, execution_id) == []
    assert await claim(db, "node-3") == execution_id
    assert await rows(db, execution_id) == []
    assert await event_types(db, execution_id) == []
    [in_flight] = await attempts(db, execution_id)
    assert (in_flight.attempt, in_flight.state, in_flight.node) == (0, S.PROCESSING, "node-3")
    assert in_flight.started_at == await started(db, execution_id)


async def test_a_retried_failure_writes_its_cause_typed_and_the_re_enqueue_untyped(db: Database, handler: str) -> None:
    execution_id = await processing(db)
    start = await started(db, execution_id)
    await fail(db, execution_id, 0)
    failed, requeued = await rows(db, execution_id)  # the insert and the claim wrote none
    assert failed == {"new_state": "FAILED", "type": "execution.failed", "attempt": 0, "started_at": start,
                      "node": "node-1", "http_status": 500, "error": "HTTP 500 Internal Server Error: boom"}
    assert requeued["new_state"] == "ENQUEUED" and untyped(requeued)


async def test_a_final_failure_writes_its_cause_then_a_dead_letter(db: Database, handler: str) -> None:
    execution_id = await processing(db, max_attempts=1)
    await fail(db, execution_id, 0, error="refused", error_type="connection", http_status=None)
    failed, dead = await rows(db, execution_id)
    assert (failed["type"], failed["http_status"], failed["error"]) == ("execution.failed", None, "refused")
    assert dead == {"new_state": "DEAD_LETTER", "type": "execution.dead_lettered", "attempt": 0, "started_at": None,
                    "node": None, "http_status": None, "error": None}


async def test_a_success_records_its_attempt_start_node_and_status(db: Database, handler: str) -> None:
    execution_id = await processing(db, node="node-7")
    start = await started(db, execution_id)
    await succeed(db, execution_id, 0, 201)
    [done] = await rows(db, execution_id)  # the outcome's row is the execution's only one
    assert done == {"new_state": "SUCCEEDED", "type": "execution.succeeded", "attempt": 0, "started_at": start,
                    "node": "node-7", "http_status": 201, "error": None}
    [attempt] = await attempts(db, execution_id)
    assert (attempt.state, attempt.http_status, attempt.node, attempt.error_type) == (S.SUCCEEDED, 201, "node-7", None)


async def test_a_batch_of_successes_keeps_each_status_with_its_row(db: Database, handler: str) -> None:
    ids = [await enqueued(db) for _ in range(3)]
    async with db.transaction() as conn:
        claimed = await repo.claim(conn, "node-1", 3, [], default_timeout=60.0)
        statuses = {c.id: 200 + n for n, c in enumerate(claimed)}
        statuses[claimed[-1].id] = None  # a completion callback's success: no status
        done = await repo.succeed_quietly(conn, [(c.id, c.attempt, None) for c in claimed], db.notify_channel,
                                          [statuses[c.id] for c in claimed])
    assert done == 3
    for execution_id in ids:
        [done] = await rows(db, execution_id)
        assert done["http_status"] == statuses[execution_id]


async def test_a_cancel_ends_the_attempt_only_when_it_was_processing(db: Database, handler: str) -> None:
    waiting = await enqueued(db, delay_seconds=3600)  # never claimed here
    running = await processing(db)
    start = await started(db, running)
    async with db.transaction() as conn:
        assert await repo.cancel(conn, waiting) is not None
        assert await repo.cancel(conn, running) is not None
    assert (await rows(db, waiting))[-1] == {"new_state": "CANCELLED", "type": "execution.cancelled", "attempt": None,
                                             "started_at": None, "node": None, "http_status": None, "error": None}
    assert (await rows(db, running))[-1] == {"new_state": "CANCELLED", "type": "execution.cancelled", "attempt": 0,
                                             "started_at": start, "node": "node-1", "http_status": None,
                                             "error": None}
    assert await attempts(db, waiting) == []
    [cancelled] = await attempts(db, running)
    assert (cancelled.state, cancelled.started_at, cancelled.node) == (S.CANCELLED, start, "node-1")
    assert await event_types(db, waiting) == await event_types(db, running) == ["execution.cancelled"]


async def test_a_manual_retry_is_typed_and_starts_a_new_attempt(db: Database, handler: str) -> None:
    execution_id = await processing(db, max_attempts=1)
    await fail(db, execution_id, 0)
    async with db.transaction() as conn:
        retried = await repo.retry_manually(conn, execution_id)
    assert retried is not None and retried.attempt == 1
    assert (await rows(db, execution_id))[-1] == {"new_state": "ENQUEUED", "type": "execution.retried",
                                                  "attempt": None, "started_at": None, "node": None,
                                                  "http_status": None, "error": None}
    await claim(db, "node-2")
    await succeed(db, execution_id, 1, 200)
    history = await attempts(db, execution_id)
    assert [(a.attempt, a.state, a.node) for a in history] == [(0, S.FAILED, "node-1"), (1, S.SUCCEEDED, "node-2")]
    assert await event_types(db, execution_id) == ["execution.failed", "execution.dead_lettered", "execution.retried",
                                                   "execution.succeeded"]


async def test_a_late_success_after_abandoning_makes_the_attempt_succeeded(db: Database, handler: str) -> None:
    execution_id = await enqueued(db)
    async with db.transaction() as conn:  # a CRON attempt stays ABANDONED (its schedule fires again)
        await execute(conn, "UPDATE job_executions SET job_type = 'CRON', fire_at = now() WHERE id = :id",
                      id=execution_id)
    await claim(db)
    await fail(db, execution_id, 0, cause=S.ABANDONED, error="no reply by the deadline",
               error_type="abandoned_deadline", http_status=None)
    [abandoned] = await attempts(db, execution_id)
    assert (abandoned.state, abandoned.error_type, abandoned.http_status) == (S.ABANDONED, "abandoned_deadline", None)
    assert abandoned.error == "no reply by the deadline"
    await succeed(db, execution_id, 0, 200)
    [late] = await attempts(db, execution_id)
    assert (late.state, late.started_at, late.http_status, late.error_type, late.error) == (
        S.SUCCEEDED, abandoned.started_at, 200, None, None)
    assert late.ended_at is not None and abandoned.ended_at is not None and late.ended_at >= abandoned.ended_at
    async with db.transaction() as conn:
        events = await repo.event_page(conn, execution_id, 0, 10)
    assert [e.type for e in events] == [EventType.ABANDONED, EventType.SUCCEEDED]
    assert "retry_at" not in events[0].data  # no attempt follows an abandoned CRON fire


async def test_retry_at_is_added_to_a_failure_another_attempt_follows(db: Database, handler: str) -> None:
    execution_id = await processing(db, max_attempts=2)
    await fail(db, execution_id, 0)
    await claim(db)
    await fail(db, execution_id, 1)
    async with db.transaction() as conn:
        first, last, dead = await repo.event_page(conn, execution_id, 0, 10)
        [requeued] = [r for r in await fetch(conn, "SELECT event FROM job_events WHERE execution_id = :id "
                                                   "AND type IS NULL AND event->>'new_state' = 'ENQUEUED' "
                                                   "AND (event->>'attempt')::int = 1", id=execution_id)]
    assert (first.type, last.type, dead.type) == (EventType.FAILED, EventType.FAILED, EventType.DEAD_LETTERED)
    assert first.data["retry_at"] == requeued["event"]["scheduled_at"]
    assert "retry_at" not in last.data and "retry_at" not in dead.data
    assert set(first.data) - {"retry_at"} == set(last.data)


async def test_a_claim_put_back_undispatched_is_no_attempt(db: Database, handler: str) -> None:
    from app.domain.retry import RetryPolicy
    from app.services.outcomes import ClaimConfig, OutcomeService

    lost = await processing(db)
    [in_flight] = await attempts(db, lost)  # PROCESSING: shown in flight until the node puts it back
    assert (in_flight.state, in_flight.ended_at, in_flight.node) == (S.PROCESSING, None, "node-1")
    service = OutcomeService(db, RetryPolicy(), ClaimConfig("node-1", (), 60.0))
    assert await service.release_untracked([]) == 1
    assert await attempts(db, lost) == []
    [released] = await rows(db, lost)  # the put-back's row only (the claim wrote none)
    assert released["new_state"] == "ENQUEUED" and untyped(released)
    await claim(db, "node-2")  # claimed again at the same attempt and dispatched
    await succeed(db, lost, 0, 200)
    [only] = await attempts(db, lost)
    assert (only.attempt, only.state, only.node) == (0, S.SUCCEEDED, "node-2")


async def test_a_dead_nodes_attempts_are_abandoned_with_that_node(db: Database, handler: str, caplog) -> None:
    caplog.set_level(logging.WARNING, logger="app.services.coordination")
    execution_id = await processing(db, node="dead-node-x")
    async with db.transaction() as conn:
        await execute(conn, "INSERT INTO job_server_heartbeats(server_id, last_heartbeat, started_at) "
                            "VALUES ('dead-node-x', now() - interval '1 hour', now() - interval '1 hour')")
    report = await settled_scanner(db).recover_dead_nodes()
    assert report.recovered == 1
    [abandoned] = await attempts(db, execution_id)
    assert (abandoned.state, abandoned.node, abandoned.error_type, abandoned.http_status) == (
        S.ABANDONED, "dead-node-x", "abandoned_node", None)
    assert abandoned.duration_ms is not None and abandoned.duration_ms >= 0
    # One WARNING line for the abandoned attempt, which is retried.
    [line] = [r for r in caplog.records if getattr(r, "jobwire", {}).get("execution_id") == str(execution_id)]
    assert line.levelno == logging.WARNING and "abandoned (abandoned_node), retrying" in line.getMessage()
    assert {k: line.jobwire[k] for k in ("attempt", "handler", "queue", "node", "error_type", "duration_ms")} == {
        "attempt": 0, "handler": "h", "queue": "default", "node": "dead-node-x", "error_type": "abandoned_node",
        "duration_ms": abandoned.duration_ms}


async def test_rows_written_before_the_history_existed_are_not_listed(db: Database, handler: str) -> None:
    execution_id = await processing(db)
    await succeed(db, execution_id, 0, 200)
    async with db.transaction() as conn:  # as revision 20261201_0010 found them
        await execute(conn, "UPDATE job_events SET type = NULL, attempt = NULL, started_at = NULL, node = NULL, "
                            "http_status = NULL, error = NULL WHERE execution_id = :id", id=execution_id)
    assert await attempts(db, execution_id) == []
    assert await event_types(db, execution_id) == []
