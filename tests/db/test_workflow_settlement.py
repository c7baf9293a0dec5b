"""How the transitions settle a workflow's children (jobwire_workflow_transitions) with real
concurrent sessions: two parents of one child ending at once in two transactions enqueue it
exactly once, whatever the order; no job is ever left WAITING with every parent terminal (one
query over the whole table says so); a dead-lettered root cancels a chain of thousands of
descendants in one transaction (no trigger recursion, no stack depth), while a `run` child in
the chain is still enqueued. Workflows are made by WorkflowService; parents end through the
statements the nodes use (the claim, succeed_attempts, end_attempt, cancel)."""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator, Sequence
from typing import Any
from uuid import UUID

import asyncpg
import pytest

from app.db.database import Connection, Database
from app.db.executions import ExecutionRepository
from app.db.handlers import HandlerRepository
from app.domain.errors import DatabaseContention
from app.domain.signing import new_handler_secret
from app.domain.executions import NewJob
from app.domain.states import JobState
from app.domain.workflows import DependencyPolicy, NewWorkflow, WorkflowJob
from app.services.enqueue import EnqueueLimits
from app.services.workflows import Made, WorkflowService
from tests.conftest import scalar, sql, waits_for_a_lock
from tests.state_moves import NO_STATE_MOVES, STATE_MOVES

repo = ExecutionRepository()
TERMINAL = ("SUCCEEDED", "DEAD_LETTER", "CANCELLED")

# The invariants of the settlement, over every job and workflow stored: each a fault, and where.
INVARIANTS = """
SELECT 'WAITING with every parent terminal' AS fault, e.workflow_ref AS ref FROM job_executions e
WHERE e.state = 'WAITING' AND e.suspensions IS NULL AND NOT EXISTS (
    SELECT 1 FROM job_dependencies d JOIN job_executions p ON p.id = d.parent_id
    WHERE d.child_id = e.id AND p.state NOT IN ('SUCCEEDED', 'DEAD_LETTER', 'CANCELLED'))
UNION ALL
SELECT 'pending_parents is not the count of its parents unfinished', e.workflow_ref FROM job_executions e
WHERE e.state = 'WAITING' AND e.suspensions IS NULL AND e.pending_parents IS DISTINCT FROM (
    SELECT count(*) FROM job_dependencies d JOIN job_executions p ON p.id = d.parent_id
    WHERE d.child_id = e.id AND p.state NOT IN ('SUCCEEDED', 'DEAD_LETTER', 'CANCELLED'))
UNION ALL
SELECT 'ENQUEUED or PROCESSING with a parent unfinished', e.workflow_ref FROM job_executions e
WHERE e.state IN ('ENQUEUED', 'PROCESSING') AND EXISTS (
    SELECT 1 FROM job_dependencies d JOIN job_executions p ON p.id = d.parent_id
    WHERE d.child_id = e.id AND p.state NOT IN ('SUCCEEDED', 'DEAD_LETTER', 'CANCELLED'))
UNION ALL
SELECT 'a cancel child ENQUEUED though a parent failed', e.workflow_ref FROM job_executions e
WHERE e.on_dependency_failure = 'cancel' AND e.state IN ('WAITING', 'ENQUEUED') AND EXISTS (
    SELECT 1 FROM job_dependencies d JOIN job_executions p ON p.id = d.parent_id
    WHERE d.child_id = e.id AND p.state IN ('DEAD_LETTER', 'CANCELLED'))
UNION ALL
SELECT 'the workflow''s counts, jobs, unfinished or state are not its jobs''', CAST(w.id AS text)
FROM job_workflows w
WHERE (SELECT COALESCE(jsonb_object_agg(k.state, k.n), '{}')
        FROM (SELECT y.state, sum(y.n) AS n
              FROM (SELECT c.key AS state, CAST(c.value AS int) AS n FROM jsonb_each_text(w.counts) c
                    UNION ALL  -- the moves appended beside the row, not folded in yet
                    SELECT d.state, d.n FROM job_workflow_deltas d WHERE d.workflow_id = w.id) AS y
              GROUP BY y.state HAVING sum(y.n) <> 0) AS k)
      <> (SELECT COALESCE(jsonb_object_agg(x.state, x.n), '{}')
          FROM (SELECT e.state, count(*) AS n FROM job_executions e WHERE e.workflow_id = w.id GROUP BY e.state) x)
   OR w.jobs <> (SELECT count(*) FROM job_executions e WHERE e.workflow_id = w.id)
   OR w.unfinished <> (SELECT count(*) FROM job_executions e WHERE e.workflow_id = w.id
                       AND e.state NOT IN ('SUCCEEDED', 'DEAD_LETTER', 'CANCELLED'))
   OR (w.state = 'RUNNING') <> (w.unfinished > 0)
"""


async def assert_settled(db: Database) -> None:
    faults = [(r["fault"], r["ref"]) for r in await sql(db, INVARIANTS)]
    assert faults == [], faults


@pytest.fixture
async def service(db: Database) -> WorkflowService:
    async with db.transaction() as conn:
        await HandlerRepository().upsert(conn, name="h", url="http://127.0.0.1:9/h", timeout_seconds=None,
                                         max_concurrency=None, stateful=False, new_secret=new_handler_secret())
    return WorkflowService(db, EnqueueLimits(max_payload_bytes=1 << 20))


@pytest.fixture
async def sessions(db: Database) -> AsyncIterator[list[asyncpg.Connection]]:
    """Eight connections of the pool, each a session of its own (as eight nodes' would be)."""
    held = [await db.pool.acquire() for _ in range(8)]
    try:
        yield held
    finally:
        for conn in held:
            try:  # a test that failed may leave a session mid-statement: never hang on it
                await asyncio.wait_for(db.pool.release(conn), 10)
            except (TimeoutError, asyncpg.PostgresError, asyncpg.InterfaceError):
                conn.terminate()


def wjob(ref: str, *parents: str, run: bool = False) -> WorkflowJob:
    return WorkflowJob(ref=ref, job=NewJob(handler="h", job_id=ref, payload={"ref": ref}), depends_on=parents,
                       on_dependency_failure=DependencyPolicy.RUN if run else DependencyPolicy.CANCEL)


async def make(service: WorkflowService, jobs: Sequence[WorkflowJob]) -> dict[str, UUID]:
    made: Made = await service.create(NewWorkflow(jobs=tuple(jobs)))
    return {i.ref: i.execution_id for i in made.items}


async def claim_all(db: Database, expected: int) -> dict[UUID, int]:
    """Claims every due job (as a node would); their attempts by id."""
    async with db.transaction() as conn:
        claimed = await repo.claim(conn, "node-1", expected + 1, [], default_timeout=600.0)
    assert len(claimed) == expected
    return {c.id: c.attempt for c in claimed}


async def succeed(conn: Connection, execution_id: UUID, attempt: int) -> None:
    """The success a node records (the completer's statement)."""
    [ended] = await repo.succeed_attempts(conn, [(execution_id, attempt, {"ok": True})], "jobwire_test")
    assert ended.execution.state == JobState.SUCCEEDED


async def new_states(db: Database, execution_id: UUID) -> list[str]:
    """The states the execution's event rows record, oldest first."""
    return [r["s"] for r in await sql(db, "SELECT event->>'new_state' AS s FROM job_events WHERE execution_id = :id "
                                          "ORDER BY id", id=execution_id)]


# The insert of a job and a workflow's release of a child write no event row (DESIGN §8), so "each
# child enqueued exactly once" is read from the rows themselves (tests/state_moves.py).
@pytest.fixture
async def state_moves(db: Database) -> AsyncIterator[None]:
    """Every state of every job's row recorded in test_state_moves while the test runs (read by
    moves). Ask for it before `sessions`: it needs a pooled connection at its start and end."""
    async with db.transaction() as conn:
        await conn.execute(NO_STATE_MOVES + STATE_MOVES)
    try:
        yield
    finally:
        async with db.transaction() as conn:
            await conn.execute(NO_STATE_MOVES)


async def moves(db: Database, execution_id: UUID) -> list[str]:
    """The states the execution's row took, oldest first (the fixture state_moves records them)."""
    return [r["state"] for r in await sql(db, "SELECT state FROM test_state_moves WHERE execution_id = :id "
                                              "ORDER BY id", id=execution_id)]


async def rows(db: Database, ids: Sequence[UUID]) -> dict[UUID, Any]:
    found = await sql(db, "SELECT id, workflow_ref, state, pending_parents, error_type, last_error "
                          "FROM job_executions WHERE id = ANY(:ids)", ids=list(ids))
    return {r["id"]: r for r in found}


def pairs(n: int) -> list[WorkflowJob]:
    """n children, each with two parents of its own: l{i}, r{i} → c{i}."""
    jobs: list[WorkflowJob] = []
    for i in range(n):
        jobs += [wjob(f"l{i:02d}"), wjob(f"r{i:02d}"), wjob(f"c{i:02d}", f"l{i:02d}", f"r{i:02d}")]
    return jobs


async def assert_each_child_enqueued_once(db: Database, ids: dict[str, UUID], n: int) -> None:
    children = [ids[f"c{i:02d}"] for i in range(n)]
    found = await rows(db, children)
    assert {(r["state"], r["pending_parents"]) for r in found.values()} == {("ENQUEUED", 0)}
    for child in children:
        # Inserted waiting, then enqueued by exactly one of its parents' transitions; neither wrote
        # an event row (DESIGN §8).
        assert await moves(db, child) == ["WAITING", "ENQUEUED"], found[child]["workflow_ref"]
        assert await new_states(db, child) == [], found[child]["workflow_ref"]


# --- two parents of one child at once -------------------------------------------------------

async def test_two_transactions_ending_the_two_parents_of_50_children_in_opposite_orders_enqueue_each_once(
        db: Database, service: WorkflowService, state_moves: None,
        sessions: list[asyncpg.Connection]) -> None:
    """Two nodes, each recording one parent of every child in one transaction (the left parents
    in ascending order, the right ones descending, then the other way round), at once."""
    first, second = sessions[0], sessions[1]
    for round_ in range(4):
        ids = await make(service, pairs(50))
        attempts = await claim_all(db, 100)
        lefts = [ids[f"l{i:02d}"] for i in range(50)]
        rights = [ids[f"r{i:02d}"] for i in range(50)][::-1]
        if round_ % 2:
            lefts, rights = lefts[::-1], rights[::-1]

        async def end_all(conn: asyncpg.Connection, parents: list[UUID], attempts: dict[UUID, int]) -> None:
            async with conn.transaction():
                for k, parent in enumerate(parents):
                    await succeed(conn, parent, attempts[parent])
                    if k % 10 == 0:
                        await asyncio.sleep(0.001)  # let the other session in

        await asyncio.gather(end_all(first, lefts, attempts), end_all(second, rights, attempts))
        await assert_each_child_enqueued_once(db, ids, 50)
        await assert_settled(db)
        await sql(db, "UPDATE job_executions SET state = 'CANCELLED' WHERE state = 'ENQUEUED'")  # the round ends
    assert await scalar(db, "SELECT count(*) FROM job_workflows WHERE state = 'CANCELLED'") == 4


async def test_the_second_parent_waits_for_the_first_and_then_enqueues_the_child(
        db: Database, service: WorkflowService, state_moves: None,
        sessions: list[asyncpg.Connection]) -> None:
    """The exact race, forced 50 times: one session has ended a parent, not committed; the other
    ends the second parent and waits (on the workflow's row); the first commits; the second then
    sees the child's count and enqueues it. Which parent goes first alternates."""
    ids = await make(service, pairs(50))
    attempts = await claim_all(db, 100)
    one, other = sessions[0], sessions[1]
    for i in range(50):
        a, b = ids[f"l{i:02d}"], ids[f"r{i:02d}"]
        if i % 2:
            a, b = b, a
        transaction = one.transaction()
        await transaction.start()
        await succeed(one, a, attempts[a])

        async def then(b: UUID) -> None:
            async with other.transaction():
                await succeed(other, b, attempts[b])

        waiting = asyncio.create_task(then(b))
        await waits_for_a_lock(db, one)
        child = (await rows(db, [ids[f"c{i:02d}"]]))[ids[f"c{i:02d}"]]
        assert (child["state"], child["pending_parents"]) == ("WAITING", 2)  # nothing committed yet
        await transaction.commit()
        await waiting
    await assert_each_child_enqueued_once(db, ids, 50)
    await assert_settled(db)


async def test_one_parent_failing_while_the_other_succeeds_settles_the_child_once(
        db: Database, service: WorkflowService, state_moves: None,
        sessions: list[asyncpg.Connection]) -> None:
    """At once: l{i} dead-lettered (end_attempt, not retryable), r{i} succeeded. A `cancel` child
    is cancelled once (one execution.cancelled), a `run` child enqueued once."""
    jobs: list[WorkflowJob] = []
    for i in range(30):
        jobs += [wjob(f"l{i:02d}"), wjob(f"r{i:02d}"), wjob(f"c{i:02d}", f"l{i:02d}", f"r{i:02d}", run=i % 2 == 1)]
    ids = await make(service, jobs)
    attempts = await claim_all(db, 60)

    async def dead_letter(conn: asyncpg.Connection, parents: list[UUID]) -> None:
        for parent in parents:
            async with conn.transaction():
                ended = await repo.end_attempt(conn, parent, attempts[parent], cause=JobState.FAILED, error="boom",
                                               error_type="handler_failed", retryable=False, delay=0.0)
                assert ended is not None and ended.execution.state == JobState.DEAD_LETTER

    async def succeed_each(conn: asyncpg.Connection, parents: list[UUID]) -> None:
        for parent in parents:
            async with conn.transaction():
                await succeed(conn, parent, attempts[parent])

    await asyncio.gather(dead_letter(sessions[0], [ids[f"l{i:02d}"] for i in range(30)]),
                         succeed_each(sessions[1], [ids[f"r{i:02d}"] for i in range(30)][::-1]))
    for i in range(30):
        child = ids[f"c{i:02d}"]
        row = (await rows(db, [child]))[child]
        if i % 2:
            assert (row["state"], row["error_type"]) == ("ENQUEUED", None)
            assert await moves(db, child) == ["WAITING", "ENQUEUED"]
            assert await new_states(db, child) == []  # the insert and the release write none (DESIGN §8)
        else:
            assert (row["state"], row["error_type"]) == ("CANCELLED", "dependency_failed")
            assert row["last_error"] == f"dependency l{i:02d} (execution {ids[f'l{i:02d}']}) ended DEAD_LETTER"
            assert await moves(db, child) == ["WAITING", "CANCELLED"]
            assert await new_states(db, child) == ["CANCELLED"]
            assert await scalar(db, "SELECT count(*) FROM job_events WHERE execution_id = :id "
                                    "AND type = 'execution.cancelled'", id=child) == 1
    await assert_settled(db)


async def test_eight_sessions_running_random_graphs_never_leave_a_job_waiting_for_nothing(
        db: Database, service: WorkflowService, sessions: list[asyncpg.Connection]) -> None:
    """Three workflows of random graphs (each job with up to four earlier parents, some `run`),
    run to the end in waves: every due job is ended by one of eight sessions at once, each in a
    transaction of its own (mostly succeeded, some dead-lettered, some cancelled), in a random
    order. After every wave the invariants hold over the whole table."""
    rng = random.Random(24)
    for w in range(3):
        jobs = []
        for i in range(300):
            earlier = [f"w{w}-{k:03d}" for k in range(i)]
            parents = rng.sample(earlier, rng.randint(0, min(4, i))) if i > 5 else []
            jobs.append(wjob(f"w{w}-{i:03d}", *parents, run=rng.random() < 0.15))
        await make(service, jobs)
    waves = 0
    while True:
        due = [r["id"] for r in await sql(db, "SELECT id FROM job_executions WHERE state = 'ENQUEUED'")]
        if not due:
            break
        waves += 1
        rng.shuffle(due)
        outcomes = [rng.choices(["SUCCEEDED", "DEAD_LETTER", "CANCELLED"], [90, 5, 5])[0] for _ in due]

        async def work(conn: asyncpg.Connection, share: list[tuple[UUID, str]]) -> None:
            for execution_id, outcome in share:
                async with conn.transaction():
                    if outcome == "CANCELLED":
                        assert await repo.cancel(conn, execution_id) is not None
                    else:
                        await conn.execute("UPDATE job_executions SET state = $2, completed_at = now() "
                                           "WHERE id = $1 AND state = 'ENQUEUED'", execution_id, outcome)

        items = list(zip(due, outcomes, strict=True))
        await asyncio.gather(*(work(conn, items[k::len(sessions)]) for k, conn in enumerate(sessions)))
        await assert_settled(db)
    assert waves >= 3
    assert await scalar(db, "SELECT count(*) FROM job_executions WHERE state NOT IN ('SUCCEEDED', 'DEAD_LETTER', "
                            "'CANCELLED')") == 0
    assert await scalar(db, "SELECT count(*) FROM job_workflows WHERE state = 'RUNNING'") == 0
    ended = await scalar(db, "SELECT count(*) FROM job_events WHERE type LIKE 'workflow.%'")
    assert ended == 3  # each workflow ended once


async def test_jobs_added_while_their_parents_end_are_settled_either_way(
        db: Database, service: WorkflowService, sessions: list[asyncpg.Connection]) -> None:
    """POST /v1/workflows/{id}/jobs racing the ends of the parents it names: the child is
    ENQUEUED (or CANCELLED, for a dead-lettered parent) whichever commits first. A transaction
    the database chose as a deadlock's victim runs again (as the service and the outcome recorder
    do); that the deadlock happens at all is test_adding_a_job_while_its_parent_succeeds_does_not_deadlock."""
    made = await service.create(NewWorkflow(jobs=tuple([wjob("keep")] + [wjob(f"p{i:02d}") for i in range(40)])))
    ids = {i.ref: i.execution_id for i in made.items}
    attempts = await claim_all(db, 41)

    async def end(k: int) -> None:
        """Session k ends the parents p{i} with i ≡ k (mod 8), one transaction each."""
        conn = sessions[k]
        for i in range(k, 40, 8):
            await asyncio.sleep(rng.random() * 0.005)
            parent = ids[f"p{i:02d}"]
            while True:
                try:
                    async with conn.transaction():
                        if i % 4 == 3:
                            await repo.end_attempt(conn, parent, attempts[parent], cause=JobState.FAILED, error="x",
                                                   error_type="handler_failed", retryable=False, delay=0.0)
                        else:
                            await succeed(conn, parent, attempts[parent])
                    break
                except asyncpg.DeadlockDetectedError:
                    continue

    async def add(i: int) -> UUID:
        await asyncio.sleep(rng.random() * 0.02)
        _, [item] = await service.add_jobs(made.workflow.id, [wjob(f"c{i:02d}", f"p{i:02d}")])
        return item.execution_id

    rng = random.Random(7)
    results = await asyncio.gather(*(add(i) for i in range(40)), *(end(k) for k in range(8)))
    children: list[UUID] = list(results[:40])
    found = await rows(db, children)
    for i, child in enumerate(children):
        expected = "CANCELLED" if i % 4 == 3 else "ENQUEUED"
        assert found[child]["state"] == expected, (i, dict(found[child]))
    await assert_settled(db)


# --- a deep chain --------------------------------------------------------------------------

async def test_a_dead_lettered_root_cancels_a_chain_of_3000_in_one_transaction_and_a_run_child_still_runs(
        db: Database, service: WorkflowService) -> None:
    """j0000 → j0001 → … → j2999 (made 1,000 at a time), and `report` (run) after the last. The
    root's dead letter is one statement of one transaction: every descendant CANCELLED
    (dependency_failed, naming its own parent), with no trigger recursion (a trigger per level
    would pass max_stack_depth long before 3,000), and `report` ENQUEUED."""
    refs = [f"j{i:04d}" for i in range(3000)]
    made = await service.create(NewWorkflow(jobs=tuple(wjob(r, *([refs[i - 1]] if i else []))
                                                       for i, r in enumerate(refs[:1000]))))
    for start in (1000, 2000):
        await service.add_jobs(made.workflow.id, [wjob(refs[i], refs[i - 1]) for i in range(start, start + 1000)])
    _, [report] = await service.add_jobs(made.workflow.id, [wjob("report", refs[-1], run=True)])
    ids = {r["workflow_ref"]: r["id"] for r in await sql(db, "SELECT workflow_ref, id FROM job_executions")}
    attempts = await claim_all(db, 1)

    async with db.transaction() as conn:
        ended = await repo.end_attempt(conn, ids["j0000"], attempts[ids["j0000"]], cause=JobState.FAILED,
                                       error="boom", error_type="handler_failed", retryable=False, delay=0.0)
        assert ended is not None and ended.execution.state == JobState.DEAD_LETTER
        # Within the transaction, before its commit: all settled by that one statement.
        assert await conn.fetchval("SELECT count(*) FROM job_executions WHERE state = 'CANCELLED' "
                                   "AND error_type = 'dependency_failed'") == 2999
    found = {r["workflow_ref"]: r for r in await sql(db, "SELECT workflow_ref, state, error_type, last_error "
                                                         "FROM job_executions")}
    for i in range(1, 3000):
        row = found[refs[i]]
        assert (row["state"], row["error_type"]) == ("CANCELLED", "dependency_failed"), refs[i]
        parent_state = "DEAD_LETTER" if i == 1 else "CANCELLED"
        assert row["last_error"] == f"dependency {refs[i - 1]} (execution {ids[refs[i - 1]]}) ended {parent_state}"
    assert found["report"]["state"] == "ENQUEUED" and report.state in ("WAITING",)
    assert await scalar(db, "SELECT count(*) FROM job_events WHERE type = 'execution.cancelled'") == 2999
    workflow = await service.get(made.workflow.id)
    assert (workflow.state, dict(workflow.counts)) == ("RUNNING", {"DEAD_LETTER": 1, "CANCELLED": 2999,
                                                                   "ENQUEUED": 1})
    await assert_settled(db)
    # The report runs and the workflow ends FAILED, once.
    attempts = await claim_all(db, 1)
    async with db.transaction() as conn:
        await succeed(conn, ids["report"], attempts[ids["report"]])
    workflow = await service.get(made.workflow.id)
    assert workflow.state == "FAILED" and workflow.completed_at is not None
    assert await scalar(db, "SELECT count(*) FROM job_events WHERE type LIKE 'workflow.%'") == 1
    await assert_settled(db)


async def test_a_run_child_inside_a_chain_is_enqueued_and_its_descendants_wait_for_it(
        db: Database, service: WorkflowService) -> None:
    """a → b → c (run) → d → e, and f (cancel) after c: a's dead letter cancels b only; c runs,
    d, e and f wait for it; c's success enqueues d and f, and on to e."""
    ids = await make(service, [wjob("a"), wjob("b", "a"), wjob("c", "b", run=True), wjob("d", "c"), wjob("e", "d"),
                               wjob("f", "c")])
    attempts = await claim_all(db, 1)
    async with db.transaction() as conn:
        await repo.end_attempt(conn, ids["a"], attempts[ids["a"]], cause=JobState.FAILED, error="boom",
                               error_type="handler_failed", retryable=False, delay=0.0)

    async def state_of() -> dict[str, tuple[str, str | None, int | None]]:
        found = await rows(db, list(ids.values()))
        return {r["workflow_ref"]: (r["state"], r["error_type"], r["pending_parents"]) for r in found.values()}

    assert await state_of() == {"a": ("DEAD_LETTER", "handler_failed", 0), "b": ("CANCELLED", "dependency_failed", 1),
                                "c": ("ENQUEUED", None, 0), "d": ("WAITING", None, 1), "e": ("WAITING", None, 1),
                                "f": ("WAITING", None, 1)}
    await assert_settled(db)
    attempts = await claim_all(db, 1)
    async with db.transaction() as conn:
        await succeed(conn, ids["c"], attempts[ids["c"]])
    states = await state_of()
    assert (states["d"][0], states["e"][0], states["f"][0]) == ("ENQUEUED", "WAITING", "ENQUEUED")
    await assert_settled(db)


# --- lock order (each test states what should happen; they fail while the server deadlocks) ---

async def test_adding_a_job_while_its_parent_succeeds_does_not_deadlock(
        db: Database, service: WorkflowService, sessions: list[asyncpg.Connection]) -> None:
    """POST /v1/workflows/{id}/jobs naming parent p, while a node records p's success. The
    service locks the workflow's row first and reads p's state with no lock; the success updates
    p, then waits in its trigger for the workflow's row: it waits for the request, never each for
    the other, and once the request commits its trigger sees the new child c and enqueues it
    (the request counted p as unfinished). The statements are the service's own, in its order;
    only the moment is forced."""
    made = await service.create(NewWorkflow(jobs=(wjob("keep"), wjob("p"))))
    ids = {i.ref: i.execution_id for i in made.items}
    attempts = await claim_all(db, 2)
    victims: list[str] = []

    async def node_records_the_success() -> None:
        try:
            async with sessions[0].transaction():
                await succeed(sessions[0], ids["p"], attempts[ids["p"]])
        except asyncpg.DeadlockDetectedError:
            victims.append("the node's success of p")

    ending: asyncio.Task[None] | None = None
    try:
        async with db.transaction() as conn:  # WorkflowService.add_jobs, step by step
            assert await service.workflows.lock(conn, made.workflow.id) is not None
            parents = await service.workflows.by_refs(conn, made.workflow.id, ["c", "p"])
            assert parents == {"p": (ids["p"], "PROCESSING")}
            ending = asyncio.create_task(node_records_the_success())
            await waits_for_a_lock(db, conn)  # the success updated p and waits for the workflow's row
            [item], _ = await service._add(conn, made.workflow.id, [wjob("c", "p")], parents)
            assert item.state == "WAITING"  # p unfinished when read: c counts it
    except (DatabaseContention, asyncpg.DeadlockDetectedError):
        victims.append("POST /v1/workflows/{id}/jobs")
    assert ending is not None
    await ending
    assert victims == [], (
        f"BUG: adding job c (depends_on p) while a node records p's success deadlocks; the database aborted "
        f"{victims} after deadlock_timeout")
    c = await scalar(db, "SELECT state FROM job_executions WHERE workflow_ref = 'c'")
    assert c == "ENQUEUED"
    await assert_settled(db)


async def test_a_user_cancel_racing_a_nodes_outcome_batch_ends_settled_whichever_the_database_aborts(
        db: Database, service: WorkflowService, sessions: list[asyncpg.Connection]) -> None:
    """A node records a batch of outcomes of one workflow in one transaction (OutcomeRecorder
    ._record: the successes, then each failure): p1 succeeded, then p2 dead-lettered, which
    cancels p2's WAITING child c. Between the two statements a user cancels c. The user's cancel
    holds c's row and waits for the workflow's row, which the node's first statement's trigger
    locked; the node's second statement's trigger (the cascade to c) waits for c's row: a
    deadlock the database breaks by aborting one. Nothing is lost either way: the cancel is
    retried on contention (ExecutionService.cancel), a batch that fails is recorded again one
    outcome at a time (OutcomeService.record). Both are done here as they would be."""
    made = await service.create(NewWorkflow(jobs=(wjob("p1"), wjob("p2"), wjob("c", "p2"))))
    ids = {i.ref: i.execution_id for i in made.items}
    attempts = await claim_all(db, 2)
    victims: list[str] = []

    async def user_cancels_c() -> None:
        try:
            async with sessions[1].transaction():
                assert await repo.cancel(sessions[1], ids["c"]) is not None
        except asyncpg.DeadlockDetectedError:
            victims.append("the user's cancel of c")

    node = sessions[0]
    transaction = node.transaction()
    await transaction.start()
    await succeed(node, ids["p1"], attempts[ids["p1"]])
    cancelling = asyncio.create_task(user_cancels_c())
    await waits_for_a_lock(db, node)  # the cancel holds c's row and waits for the workflow's
    try:
        await repo.end_attempt(node, ids["p2"], attempts[ids["p2"]], cause=JobState.FAILED, error="boom",
                               error_type="handler_failed", retryable=False, delay=0.0)
        await transaction.commit()
    except asyncpg.DeadlockDetectedError:
        victims.append("the node's outcome batch")
        await transaction.rollback()
    await cancelling
    assert len(victims) <= 1
    if victims == ["the node's outcome batch"]:  # recorded again, one outcome at a time
        async with node.transaction():
            await succeed(node, ids["p1"], attempts[ids["p1"]])
        async with node.transaction():
            await repo.end_attempt(node, ids["p2"], attempts[ids["p2"]], cause=JobState.FAILED, error="boom",
                                   error_type="handler_failed", retryable=False, delay=0.0)
    elif victims == ["the user's cancel of c"]:  # tried again: c is cancelled already, by its parent
        async with sessions[1].transaction():
            assert await repo.cancel(sessions[1], ids["c"]) is None
    assert await scalar(db, f"SELECT state FROM job_executions WHERE id = '{ids['c']}'") == "CANCELLED"
    assert await scalar(db, f"SELECT state FROM job_executions WHERE id = '{ids['p1']}'") == "SUCCEEDED"
    assert await scalar(db, f"SELECT state FROM job_executions WHERE id = '{ids['p2']}'") == "DEAD_LETTER"
    await assert_settled(db)
