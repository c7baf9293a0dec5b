"""Durable waits and signals (app/db/sql/waits.sql) with real concurrent sessions: a signal racing
the suspend of the wait that names it (free races in both orders, and each order forced with the
second session waiting on the first one's row lock) always resumes the execution once, consumes
the signal once, and says `woke` only when the send itself resumed it; nodes' wake scans at once
resume each due wait exactly once; the 101st suspension fails the execution (too_many_suspensions,
not retried); a suspended stateful job keeps its queue until it has finished; a suspended job of a
workflow is counted WAITING and holds its children back; a cancelled suspended job takes no signal
(409) and no wake scan revives it.

Executions are made by EnqueueService and WorkflowService, claimed by the claim the nodes use
(jobwire_claim), suspended by OutcomeService.suspend (what a node records for a `suspend` reply),
signalled by SignalService.send, woken by CoordinationService.wake_suspended and the statement
executions_resume."""

from __future__ import annotations

import asyncio
import random
import uuid
from collections import Counter
from collections.abc import AsyncIterator, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import UUID

import asyncpg
import httpx
import pytest

from app.db.database import Connection, Database
from app.db.executions import ExecutionRepository
from app.db.handlers import HandlerRepository
from app.db.waits import WaitRepository
from app.domain.dispatch import ClaimedJob
from app.domain.errors import Conflict
from app.domain.executions import NewJob
from app.domain.retry import RetryPolicy
from app.domain.signing import new_handler_secret
from app.domain.states import JobState
from app.domain.waits import MAX_SUSPENSIONS, Suspend
from app.domain.workflows import DependencyPolicy, NewWorkflow, WorkflowJob
from app.services.enqueue import EnqueueLimits, EnqueueService
from app.services.executions import ExecutionService
from app.services.outcomes import ClaimConfig, OutcomeService
from app.services.signals import SignalService
from app.services.workflows import WorkflowService
from tests.conftest import RunningServer, scalar, settled_scanner, sql, waits_for_a_lock

repo = ExecutionRepository()
waits = WaitRepository()
LIMITS = EnqueueLimits(max_payload_bytes=1 << 20)
GO = Suspend(signals=("go",))

# Every suspended WAITING execution for which a signal it names is there, unconsumed: a signal and
# a wait that missed each other (the execution would sleep until its timeout, or for ever).
MISSED = """
SELECT e.id, s.id AS signal_id FROM job_executions e
JOIN job_waits w ON w.execution_id = e.id
JOIN job_signals s ON s.execution_id = e.id AND s.consumed_at IS NULL AND s.name = ANY(w.signals)
WHERE e.state = 'WAITING' AND e.suspensions IS NOT NULL AND e.pending_parents IS NULL
"""


# --- helpers -------------------------------------------------------------------------------

class RecordingWaits(WaitRepository):
    """The repository a service uses, recording which of its resumptions resumed what: per call
    with one id, (who, id, resumed)."""

    def __init__(self, who: str, log: list[tuple[str, UUID, bool]]) -> None:
        self.who = who
        self.log = log

    async def resume(self, conn: Connection, ids: Sequence[UUID] | None, n: int = 500) -> list[str]:
        queues = await super().resume(conn, ids, n)
        if ids is not None and len(ids) == 1:
            self.log.append((self.who, ids[0], bool(queues)))
        return queues


async def add_handler(db: Database, name: str = "h") -> None:
    async with db.transaction() as conn:
        await HandlerRepository().upsert(conn, name=name, url=f"http://127.0.0.1:9/{name}", timeout_seconds=None,
                                         max_concurrency=None, stateful=False, new_secret=new_handler_secret())


@pytest.fixture
async def outcomes(db: Database) -> OutcomeService:
    await add_handler(db)
    return OutcomeService(db, RetryPolicy(base_delay=0.0, max_delay=0.0), ClaimConfig("node-1", (), 60.0))


@pytest.fixture
async def sessions(db: Database) -> AsyncIterator[list[asyncpg.Connection]]:
    """Four connections of the pool, each a session of its own (as four nodes' would be)."""
    held = [await db.pool.acquire() for _ in range(4)]
    try:
        yield held
    finally:
        for conn in held:
            await db.pool.release(conn)


async def enqueue(db: Database, jobs: Sequence[NewJob]) -> list[UUID]:
    return [r.execution.id for r in await EnqueueService(db, LIMITS).enqueue(list(jobs))]


def job(name: str, **kw: Any) -> NewJob:
    return NewJob(handler="h", job_id=name, **kw)


async def claim(db: Database, n: int = 1000, queues: Sequence[str] = (), node: str = "node-1") -> list[ClaimedJob]:
    """The nodes' claim (jobwire_claim), on an autocommit connection as a node runs it."""
    async with db.autocommit() as conn:
        return await repo.claim(conn, node, n, list(queues), default_timeout=60.0)


async def processing(db: Database, count: int, prefix: str = "j", **kw: Any) -> dict[UUID, int]:
    """`count` new executions, claimed: their attempts by id."""
    ids = await enqueue(db, [job(f"{prefix}{i:03d}", **kw) for i in range(count)])
    claimed = await claim(db, count + 1)
    assert {c.id for c in claimed} == set(ids)
    return {c.id: c.attempt for c in claimed}


async def suspend(outcomes: OutcomeService, execution_id: UUID, attempt: int, spec: Suspend = GO) -> Any:
    """What a node records for a `suspend` reply: OutcomeService.suspend in a transaction."""
    async with outcomes.db.transaction() as conn:
        return await outcomes.suspend(conn, execution_id, attempt, spec)


async def succeed(db: Database, execution_id: UUID, attempt: int) -> None:
    async with db.transaction() as conn:
        await repo.succeed_attempts(conn, [(execution_id, attempt, {"ok": True})], db.notify_channel)
    assert await state_of(db, execution_id) == "SUCCEEDED"


async def state_of(db: Database, execution_id: UUID) -> str:
    return str(await scalar(db, "SELECT state FROM job_executions WHERE id = :id", id=execution_id))


async def new_states(db: Database, execution_id: UUID) -> list[str]:
    """The states the execution's event rows record, oldest first."""
    return [r["s"] for r in await sql(db, "SELECT event->>'new_state' AS s FROM job_events WHERE execution_id = :id "
                                          "ORDER BY id", id=execution_id)]


async def assert_none_missed(db: Database) -> None:
    missed = [(r["id"], r["signal_id"]) for r in await sql(db, MISSED)]
    assert missed == [], missed


async def assert_resumed_once_by_go(db: Database, ids: Sequence[UUID], attempts: dict[UUID, int]) -> None:
    """Each execution ENQUEUED at its attempt, resumed once (one ENQUEUED event after its WAITING
    one, and no other: the insert and the claim write none, DESIGN §8), by its one signal `go`,
    consumed by that resumption, delivered once."""
    found = await sql(db, """
        SELECT e.id, e.state, e.attempt, e.suspensions, e.wake_at, w.reason, w.n, w.delivered,
               (SELECT array_agg(s.resume ORDER BY s.id) FROM job_signals s WHERE s.execution_id = e.id) AS resumes,
               (SELECT count(*) FROM job_signals s WHERE s.execution_id = e.id AND s.consumed_at IS NULL) AS unconsumed,
               (SELECT array_agg(v.event->>'new_state' ORDER BY v.id) FROM job_events v
                WHERE v.execution_id = e.id) AS events
        FROM job_executions e JOIN job_waits w ON w.execution_id = e.id
        WHERE e.id = ANY(:ids)""", ids=list(ids))
    assert len(found) == len(ids)
    for r in found:
        assert (r["state"], r["attempt"], r["suspensions"], r["wake_at"]) == ("ENQUEUED", attempts[r["id"]], 1, None)
        assert (r["reason"], r["n"], r["resumes"], r["unconsumed"]) == ("signal", 1, [1], 0), dict(r)
        assert [d["name"] for d in r["delivered"]] == ["go"]
        assert r["events"] == ["WAITING", "ENQUEUED"], dict(r)


async def assert_dispatched_with_go_once(db: Database, ids: Sequence[UUID], attempts: dict[UUID, int]) -> None:
    """Claimed again: each at the same attempt, its continuation carrying the signal once."""
    again = {c.id: c for c in await claim(db, len(ids) + 1)}
    assert set(again) == set(ids)
    for execution_id, c in again.items():
        assert c.attempt == attempts[execution_id]
        assert c.continuation is not None
        resume = c.continuation["resume"]
        assert (resume["n"], resume["reason"]) == (1, "signal")
        assert [(s["name"], s["payload"]) for s in resume["signals"]] == [("go", {"to": str(execution_id)})]


# --- a signal racing the suspend of the wait that names it -----------------------------------

async def test_a_signal_racing_the_suspend_that_waits_for_it_resumes_each_of_100_executions_once(
        db: Database, outcomes: OutcomeService) -> None:
    """For each of 100 claimed executions, one session suspends it (waiting for `go`) while
    another sends `go`, started together (the suspend first for half of them, the send first for
    the others, each a random fraction of a millisecond to a few ahead). Whatever the order, each
    ends ENQUEUED (resumed, the same attempt), its signal consumed exactly once, and `woke` is
    true exactly when the send's own resumption resumed it."""
    attempts = await processing(db, 100)
    ids = sorted(attempts)
    log: list[tuple[str, UUID, bool]] = []
    outcomes.waits = RecordingWaits("suspend", log)
    signals = SignalService(db)
    signals.waits = RecordingWaits("send", log)
    woke: dict[UUID, bool] = {}

    async def one(k: int, execution_id: UUID) -> None:
        lead = random.choice([0.0, 0.0002, 0.0005, 0.001, 0.002, 0.005])

        async def suspending() -> None:
            if k % 2:
                await asyncio.sleep(lead)
            assert await suspend(outcomes, execution_id, attempts[execution_id]) is None

        async def sending() -> None:
            if k % 2 == 0:
                await asyncio.sleep(lead)
            sent = await signals.send(execution_id, "go", {"to": str(execution_id)})
            woke[execution_id] = sent.woke

        first, second = (suspending, sending) if k % 2 == 0 else (sending, suspending)
        await asyncio.gather(first(), second())

    await asyncio.gather(*[one(k, execution_id) for k, execution_id in enumerate(ids[:6])])  # the pool warmed
    for start in range(6, 100, 6):  # six races at a time: twelve sessions
        await asyncio.gather(*[one(k, ids[k]) for k in range(start, min(start + 6, 100))])

    await assert_none_missed(db)
    await assert_resumed_once_by_go(db, ids, attempts)
    # Each execution resumed by exactly one of the two transactions; `woke` says whether it was the send's.
    resumed_by = {execution_id: [who for who, i, resumed in log if i == execution_id and resumed]
                  for execution_id in ids}
    assert {execution_id: len(by) for execution_id, by in resumed_by.items()} == dict.fromkeys(ids, 1)
    assert woke == {execution_id: by == ["send"] for execution_id, by in resumed_by.items()}
    # Both orders happened (a send that found the wait, one that came before it).
    assert 0 < sum(woke.values()) < 100, Counter(woke.values())
    await assert_dispatched_with_go_once(db, ids, attempts)


async def test_a_send_waiting_on_an_uncommitted_suspend_sees_the_wait_and_wakes_it(
        db: Database, outcomes: OutcomeService, sessions: list[asyncpg.Connection]) -> None:
    """The race forced 20 times: a node's suspend has written the wait (the execution locked, not
    committed); the send starts and waits for the row; the suspend commits; the send then sees the
    wait, stores its signal and resumes it (woke)."""
    attempts = await processing(db, 20)
    ids = sorted(attempts)
    holder = sessions[0]
    signals = SignalService(db)
    for execution_id in ids:
        transaction = holder.transaction()
        await transaction.start()
        assert await outcomes.suspend(holder, execution_id, attempts[execution_id], GO) is None
        sending = asyncio.create_task(signals.send(execution_id, "go", {"to": str(execution_id)}))
        await waits_for_a_lock(db, holder)
        assert await state_of(db, execution_id) == "PROCESSING"  # nothing committed yet
        await transaction.commit()
        sent = await sending
        assert sent.woke is True
    await assert_none_missed(db)
    await assert_resumed_once_by_go(db, ids, attempts)
    await assert_dispatched_with_go_once(db, ids, attempts)


async def test_a_suspend_waiting_on_an_uncommitted_send_sees_the_signal_and_resumes_at_once(
        db: Database, outcomes: OutcomeService, sessions: list[asyncpg.Connection]) -> None:
    """The other order forced 20 times: a send has stored its signal and looked for a wait
    (the execution locked, still PROCESSING: nothing to wake, not committed); a node's suspend
    waits for the row; the send commits; the suspend then sees the signal and resumes its own wait
    at once, consuming it."""
    attempts = await processing(db, 20)
    ids = sorted(attempts)
    holder = sessions[0]
    log: list[tuple[str, UUID, bool]] = []
    outcomes.waits = RecordingWaits("suspend", log)
    for execution_id in ids:
        transaction = holder.transaction()
        await transaction.start()
        sent = await waits.send(holder, execution_id, "go", {"to": str(execution_id)})
        assert sent is not None
        assert await waits.resume(holder, [execution_id]) == []  # PROCESSING: no wait yet
        suspending = asyncio.create_task(suspend(outcomes, execution_id, attempts[execution_id]))
        await waits_for_a_lock(db, holder)
        await transaction.commit()
        assert await suspending is None
        assert await waits.consumed(holder, sent[0])  # the send did not wake it: woke would be false
    assert log == [("suspend", execution_id, True) for execution_id in ids]
    await assert_none_missed(db)
    await assert_resumed_once_by_go(db, ids, attempts)
    await assert_dispatched_with_go_once(db, ids, attempts)


# --- nodes' wake scans at once ---------------------------------------------------------------

async def test_four_wake_scans_at_once_resume_each_due_wait_exactly_once(
        db: Database, outcomes: OutcomeService, sessions: list[asyncpg.Connection]) -> None:
    """300 suspended executions, their waits over (half by `until`, half by a timeout), woken by
    four scans at once in small batches: two nodes' coordinators (wake_suspended) and two sessions
    running executions_resume with ids NULL. Each execution is resumed exactly once: the scans'
    counts add up to 300, and each has one ENQUEUED event after its WAITING one."""
    attempts = await processing(db, 300)
    ids = sorted(attempts)
    timers, timeouts = set(ids[::2]), set(ids[1::2])
    soon = datetime.now(UTC) + timedelta(seconds=0.5)
    async with db.transaction() as conn:
        for execution_id in ids:
            spec = Suspend(until=soon) if execution_id in timers else Suspend(signals=("never",), timeout_seconds=0.5)
            assert await outcomes.suspend(conn, execution_id, attempts[execution_id], spec) is None
    assert await scalar(db, "SELECT count(*) FROM job_executions WHERE state = 'WAITING' AND wake_at IS NOT NULL") \
        == 300
    left = await scalar(db, "SELECT EXTRACT(EPOCH FROM max(wake_at) - now()) FROM job_executions")
    await asyncio.sleep(max(float(left), 0.0) + 0.1)

    async def raw_scan(conn: asyncpg.Connection) -> int:
        total = 0
        while True:
            async with conn.transaction():
                resumed = len(await waits.resume(conn, None, 7))
            total += resumed
            if resumed < 7:
                return total

    counts = await asyncio.gather(settled_scanner(db, "node-a", batch_size=10).wake_suspended(),
                                  settled_scanner(db, "node-b", batch_size=10).wake_suspended(),
                                  raw_scan(sessions[0]), raw_scan(sessions[1]))
    assert sum(counts) == 300, counts
    found = await sql(db, """
        SELECT e.id, e.state, e.attempt, w.reason,
               (SELECT count(*) FROM job_events v WHERE v.execution_id = e.id AND v.event->>'new_state' = 'ENQUEUED'
                  AND v.id > (SELECT max(x.id) FROM job_events x
                              WHERE x.execution_id = e.id AND x.event->>'new_state' = 'WAITING')) AS resumptions,
               (SELECT count(*) FROM job_events v WHERE v.execution_id = e.id) AS events
        FROM job_executions e JOIN job_waits w ON w.execution_id = e.id""")
    assert len(found) == 300
    for r in found:
        # WAITING, then ENQUEUED once (the insert and the claim write no event row: DESIGN §8)
        assert (r["state"], r["attempt"], r["resumptions"], r["events"]) == ("ENQUEUED", attempts[r["id"]], 1, 2)
        assert r["reason"] == ("timer" if r["id"] in timers else "timeout" if r["id"] in timeouts else None)
    assert await settled_scanner(db, "node-c").wake_suspended() == 0


# --- at most 100 suspensions -------------------------------------------------------------------

async def test_the_101st_suspension_fails_the_execution_and_it_is_not_retried(
        db: Database, outcomes: OutcomeService) -> None:
    """The 100th suspension is a suspension (resumed at once: its `until` has passed); the 101st
    is a failure, too_many_suspensions, not retryable: DEAD_LETTER though attempts are left."""
    assert MAX_SUSPENSIONS == 100
    attempts = await processing(db, 2, max_attempts=3)
    boundary, over = sorted(attempts)
    past = Suspend(until=datetime.now(UTC) - timedelta(minutes=1))

    await sql(db, "UPDATE job_executions SET suspensions = 99 WHERE id = :id", id=boundary)
    assert await suspend(outcomes, boundary, attempts[boundary], past) is None
    row = (await sql(db, "SELECT state, attempt, suspensions FROM job_executions WHERE id = :id", id=boundary))[0]
    assert (row["state"], row["attempt"], row["suspensions"]) == ("ENQUEUED", attempts[boundary], 100)
    [again] = await claim(db, 10)
    assert again.id == boundary and again.continuation is not None
    assert (again.continuation["resume"]["n"], again.continuation["resume"]["reason"]) == (100, "timer")

    await sql(db, "UPDATE job_executions SET suspensions = 100 WHERE id = :id", id=over)
    for execution_id in (boundary, over):
        ended = await suspend(outcomes, execution_id, attempts[execution_id], GO)
        assert ended is not None and ended.outcome == JobState.FAILED and ended.attempt == attempts[execution_id]
        row = (await sql(db, "SELECT state, attempt, suspensions, error_type, last_error, wake_at FROM job_executions "
                             "WHERE id = :id", id=execution_id))[0]
        assert (row["state"], row["attempt"], row["suspensions"], row["error_type"], row["wake_at"]) == (
            "DEAD_LETTER", attempts[execution_id], 100, "too_many_suspensions", None)
        assert row["last_error"] == "suspended more than 100 times"
    # No wait was stored for the refused suspension.
    assert await scalar(db, "SELECT count(*) FROM job_waits WHERE execution_id = :id", id=over) == 0
    assert await scalar(db, "SELECT n FROM job_waits WHERE execution_id = :id", id=boundary) == 100


# --- a suspended stateful job keeps its queue ---------------------------------------------------

async def test_a_suspended_stateful_job_keeps_its_queue_until_it_finishes(
        db: Database, outcomes: OutcomeService) -> None:
    """Two stateful jobs in queue q (and a plain one): the first is claimed and suspends; no claim
    takes the second (every queue, or q by name) while the first waits; a signal resumes the first,
    and the next claim of q takes it (the resumed job goes on; the second still does not start);
    once it succeeded, the second is claimed."""
    first, second, plain = await enqueue(db, [job("s1", queue="q", stateful=True), job("s2", queue="q", stateful=True),
                                              job("p1", queue="q")])
    taken = {c.job_id: c for c in await claim(db, 10)}
    assert set(taken) == {"s1", "p1"}
    assert await suspend(outcomes, first, taken["s1"].attempt) is None
    assert await state_of(db, first) == "WAITING"

    for node in ("node-1", "node-2"):
        assert await claim(db, 10, node=node) == []
    assert await claim(db, 10, queues=["q"]) == []
    await enqueue(db, [job("p2", queue="q")])
    assert [c.job_id for c in await claim(db, 10)] == ["p2"]  # the plain jobs of q are not held back
    assert await state_of(db, second) == "ENQUEUED"

    sent = await SignalService(db).send(first, "go", {"ok": 1})
    assert sent.woke is True and await state_of(db, first) == "ENQUEUED"
    resumed = await claim(db, 10)
    # The resumed job is the one that holds q: it goes on, the second one waits for it to finish.
    assert [c.job_id for c in resumed] == ["s1"], [(c.job_id, c.id) for c in resumed]
    assert await state_of(db, second) == "ENQUEUED"
    assert resumed[0].continuation is not None and resumed[0].continuation["resume"]["reason"] == "signal"
    await succeed(db, first, resumed[0].attempt)
    assert [c.job_id for c in await claim(db, 10)] == ["s2"]
    assert plain in {c.id for c in taken.values()}


async def test_a_resumed_stateful_job_goes_on_before_a_higher_priority_one_enqueued_while_it_waited(
        db: Database, outcomes: OutcomeService) -> None:
    """The same with a timer woken by the scan, and the second stateful job enqueued while the
    first waits, at a higher priority: the queue is still the first's until it has finished."""
    [first] = await enqueue(db, [job("s1", queue="q", stateful=True)])
    [c1] = await claim(db, 10)
    soon = datetime.now(UTC) + timedelta(seconds=0.3)
    assert await suspend(outcomes, first, c1.attempt, Suspend(until=soon)) is None
    [second] = await enqueue(db, [job("s2", queue="q", stateful=True, priority=10)])
    assert await claim(db, 10) == []
    await asyncio.sleep(0.4)
    assert await settled_scanner(db).wake_suspended() == 1
    resumed = await claim(db, 10)
    assert [c.job_id for c in resumed] == ["s1"], [(c.job_id, c.id) for c in resumed]
    await succeed(db, first, c1.attempt)
    assert [c.id for c in await claim(db, 10)] == [second]


# --- a suspended job of a workflow ---------------------------------------------------------------

async def test_a_suspended_job_of_a_workflow_is_counted_waiting_and_holds_its_children_back(
        db: Database, outcomes: OutcomeService) -> None:
    """a → b → c. a suspends (waiting for a signal): the workflow counts it WAITING, b stays
    WAITING for it (and no scan or claim moves it); a signal resumes a, it succeeds, then b runs;
    b suspends in turn (a timer) and is woken by the scan; once it succeeded, c runs; the
    workflow succeeds."""
    service = WorkflowService(db, LIMITS)

    def wjob(ref: str, *parents: str) -> WorkflowJob:
        return WorkflowJob(ref=ref, job=NewJob(handler="h", job_id=ref), depends_on=parents,
                           on_dependency_failure=DependencyPolicy.CANCEL)

    made = await service.create(NewWorkflow(jobs=(wjob("a"), wjob("b", "a"), wjob("c", "b"))))
    ids = {i.ref: i.execution_id for i in made.items}
    workflow_id = made.workflow.id

    async def counts() -> dict[str, int]:
        return dict((await service.get(workflow_id)).counts)

    async def children() -> list[tuple[str, int | None]]:
        found = await sql(db, "SELECT workflow_ref, state, pending_parents FROM job_executions "
                              "WHERE id = ANY(:ids) ORDER BY workflow_ref", ids=[ids["b"], ids["c"]])
        return [(r["state"], r["pending_parents"]) for r in found]

    [a] = await claim(db, 10)
    assert a.id == ids["a"]
    assert await suspend(outcomes, a.id, a.attempt, Suspend(signals=("go",), timeout_seconds=600)) is None
    assert await counts() == {"WAITING": 3}
    assert (await service.get(workflow_id)).state.value == "RUNNING"
    assert await children() == [("WAITING", 1), ("WAITING", 1)]
    assert await settled_scanner(db).wake_suspended() == 0
    assert await claim(db, 10) == []
    assert await children() == [("WAITING", 1), ("WAITING", 1)]

    assert (await SignalService(db).send(a.id, "go", None)).woke is True
    assert await counts() == {"ENQUEUED": 1, "WAITING": 2}
    assert await children() == [("WAITING", 1), ("WAITING", 1)]
    [again] = await claim(db, 10)
    assert again.id == ids["a"] and again.attempt == a.attempt
    assert again.workflow is not None  # still dispatched as a job of its workflow
    assert await children() == [("WAITING", 1), ("WAITING", 1)]
    await succeed(db, a.id, a.attempt)
    assert await counts() == {"SUCCEEDED": 1, "ENQUEUED": 1, "WAITING": 1}
    assert await children() == [("ENQUEUED", 0), ("WAITING", 1)]

    [b] = await claim(db, 10)
    assert b.id == ids["b"]
    soon = datetime.now(UTC) + timedelta(seconds=0.3)
    assert await suspend(outcomes, b.id, b.attempt, Suspend(until=soon)) is None
    assert await counts() == {"SUCCEEDED": 1, "WAITING": 2}
    assert await children() == [("WAITING", None), ("WAITING", 1)]
    await asyncio.sleep(0.4)
    assert await settled_scanner(db).wake_suspended() == 1
    assert await children() == [("ENQUEUED", None), ("WAITING", 1)]
    [b_again] = await claim(db, 10)
    assert b_again.id == ids["b"]
    await succeed(db, b.id, b.attempt)
    [c] = await claim(db, 10)
    assert c.id == ids["c"]
    await succeed(db, c.id, c.attempt)
    done = await service.get(workflow_id)
    assert (done.state.value, dict(done.counts)) == ("SUCCEEDED", {"SUCCEEDED": 3})
    # Inserted waiting for a and enqueued by a's success (no rows of their own, nor the claims':
    # DESIGN §8; children() saw those states above); suspended; resumed; succeeded.
    assert await new_states(db, ids["b"]) == ["WAITING", "ENQUEUED", "SUCCEEDED"]


# --- cancel of a suspended job ----------------------------------------------------------------------

async def test_a_cancelled_suspended_job_takes_no_signal_and_no_scan_revives_it(
        db: Database, outcomes: OutcomeService) -> None:
    attempts = await processing(db, 1)
    [execution_id] = attempts
    assert await suspend(outcomes, execution_id, attempts[execution_id],
                         Suspend(signals=("go",), timeout_seconds=0.2)) is None
    cancelled = await ExecutionService(db).cancel(execution_id)
    assert cancelled.state == JobState.CANCELLED
    with pytest.raises(Conflict):
        await SignalService(db).send(execution_id, "go", None)
    assert await scalar(db, "SELECT count(*) FROM job_signals") == 0
    await asyncio.sleep(0.3)  # its timeout passed
    assert await settled_scanner(db).wake_suspended() == 0
    async with db.transaction() as conn:
        assert await waits.resume(conn, [execution_id]) == []
    assert await state_of(db, execution_id) == "CANCELLED"
    assert await new_states(db, execution_id) == ["WAITING", "CANCELLED"]  # the insert and claim write none


async def test_over_http_a_cancelled_suspended_job_answers_a_signal_409(
        db: Database, outcomes: OutcomeService, api_only_server: RunningServer) -> None:
    attempts = await processing(db, 1)
    [execution_id] = attempts
    assert await suspend(outcomes, execution_id, attempts[execution_id]) is None
    async with httpx.AsyncClient(base_url=api_only_server.url, timeout=10) as client:
        shown = await client.get(f"/v1/executions/{execution_id}")
        assert shown.json()["state"] == "WAITING"
        cancelled = await client.post(f"/v1/executions/{execution_id}/cancel")
        assert cancelled.status_code == 200 and cancelled.json()["state"] == "CANCELLED", cancelled.text
        refused = await client.post(f"/v1/executions/{execution_id}/signals/go", json={"payload": 1})
        assert refused.status_code == 409, refused.text
        assert "CANCELLED" in refused.json()["detail"]
        missing = await client.post(f"/v1/executions/{uuid.uuid4()}/signals/go")
        assert missing.status_code == 404
    assert await state_of(db, execution_id) == "CANCELLED"


# --- a wait for spawned children -----------------------------------------------------------

# Every execution waiting for its spawned children, none of them unfinished, that nothing will wake:
# not due for the wake scan (a child's end and the suspend missed each other).
STRANDED = """
SELECT e.id FROM job_executions e JOIN job_waits w ON w.execution_id = e.id
WHERE e.state = 'WAITING' AND w.children AND (e.wake_at IS NULL OR e.wake_at > now())
  AND NOT EXISTS (SELECT 1 FROM job_executions c
                  WHERE c.spawned_by = e.id AND c.state NOT IN ('SUCCEEDED', 'DEAD_LETTER', 'CANCELLED'))
"""


async def test_the_last_child_ending_as_its_parent_suspends_for_its_children_never_strands_the_parent(
        db: Database, outcomes: OutcomeService) -> None:
    """50 running parents spawn one child each; the children are claimed. Then, per parent, one
    session suspends it for all its children while another records its child's success, started
    together in either order. Whatever the order, no parent is left waiting with every child
    terminal: each is resumed (reason `children`), once, by its suspend or by its child's end,
    with no wake scan, and its next dispatch carries the child by the ref it gave, with its state and result."""
    attempts = await processing(db, 50, prefix="parent")
    service = WorkflowService(db, LIMITS)
    child_of: dict[UUID, UUID] = {}
    for parent in sorted(attempts):
        spawned = await service.spawn(parent, attempts[parent], [WorkflowJob("c", job(f"child-of-{parent}"))])
        child_of[parent] = spawned.items[0].execution_id
    children = {c.id: c.attempt for c in await claim(db, 51)}
    assert set(children) == set(child_of.values())

    async def race(parent: UUID, suspend_first: bool) -> None:
        child = child_of[parent]
        pause = random.uniform(0, 0.003)

        async def first_suspend() -> None:
            await asyncio.sleep(0 if suspend_first else pause)
            await suspend(outcomes, parent, attempts[parent], Suspend(children=True))

        async def first_child() -> None:
            await asyncio.sleep(pause if suspend_first else 0)
            await succeed(db, child, children[child])

        await asyncio.gather(first_suspend(), first_child())

    await asyncio.gather(*(race(p, i % 2 == 0) for i, p in enumerate(sorted(attempts))))
    assert [r["id"] for r in await sql(db, STRANDED)] == []
    # A suspend that finds every child ended resumes at once (as one that finds its signal does);
    # a child's end that finds its parent waiting resumes it in its own transaction.
    found = await sql(db, "SELECT e.id, e.state, w.reason FROM job_executions e JOIN job_waits w "
                          "ON w.execution_id = e.id WHERE e.id = ANY(:ids)", ids=list(attempts))
    assert {(r["state"], r["reason"]) for r in found} == {("ENQUEUED", "children")}
    again = {c.id: c for c in await claim(db, 51)}
    assert set(again) == set(attempts)
    for parent, c in again.items():
        assert c.continuation is not None
        assert c.continuation["resume"]["children"] == {
            "c": {"execution_id": str(child_of[parent]), "state": "SUCCEEDED", "result": {"ok": True}}}


async def test_a_parent_waiting_for_children_it_never_spawned_resumes_at_once(
        db: Database, outcomes: OutcomeService) -> None:
    attempts = await processing(db, 1)
    [(execution_id, attempt)] = attempts.items()
    await suspend(outcomes, execution_id, attempt, Suspend(children=True))
    assert await state_of(db, execution_id) == "ENQUEUED"
    [c] = await claim(db)
    assert c.continuation is not None and c.continuation["resume"]["reason"] == "children"
    assert c.continuation["resume"]["children"] == {}


async def test_a_child_spawned_on_a_sibling_that_ends_meanwhile_is_never_left_waiting(
        db: Database, outcomes: OutcomeService) -> None:
    """30 running parents spawn child `a` each, which is claimed; then each spawns `b` depending on
    `a` while another session records `a`'s success, started together in either order. Whatever
    the order, every `b` ends ENQUEUED (released by `a`'s end, or spawned after it with nothing to
    wait for), never WAITING on a parent that has ended."""
    attempts = await processing(db, 30, prefix="parent")
    service = WorkflowService(db, LIMITS)
    first = {p: (await service.spawn(p, attempts[p], [WorkflowJob("a", job(f"a-of-{p}"))])).items[0].execution_id
             for p in sorted(attempts)}
    claimed = {c.id: c.attempt for c in await claim(db, 31)}
    assert set(claimed) == set(first.values())

    async def race(parent: UUID, spawn_first: bool) -> UUID:
        pause = random.uniform(0, 0.003)

        async def spawn_b() -> UUID:
            await asyncio.sleep(0 if spawn_first else pause)
            spawned = await service.spawn(parent, attempts[parent],
                                           [WorkflowJob("b", job(f"b-of-{parent}"), depends_on=("a",))])
            return spawned.items[0].execution_id

        async def end_a() -> None:
            await asyncio.sleep(pause if spawn_first else 0)
            await succeed(db, first[parent], claimed[first[parent]])

        b, _ = await asyncio.gather(spawn_b(), end_a())
        return b

    seconds = await asyncio.gather(*(race(p, i % 2 == 0) for i, p in enumerate(sorted(attempts))))
    found = await sql(db, "SELECT state, pending_parents FROM job_executions WHERE id = ANY(:ids)", ids=seconds)
    assert [(r["state"], r["pending_parents"]) for r in found] == [("ENQUEUED", 0)] * 30
