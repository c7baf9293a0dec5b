"""The claim: partial indexes, order, due-ness, and no double claims under concurrency."""

from __future__ import annotations

import asyncio
import re
import uuid
from collections import Counter
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from app.db.database import Database
from app.db.executions import ExecutionRepository
from app.db.handlers import HandlerRepository
from app.domain.executions import NewJob
from app.domain.signing import new_handler_secret
from app.services.enqueue import EnqueueLimits, EnqueueService
from app.db.statements import fetch, fetchrow
from tests.conftest import rolled_back

repo = ExecutionRepository()


async def add_handler(db: Database, name: str = "h") -> None:
    async with db.transaction() as conn:
        await HandlerRepository().upsert(conn, name=name, url="http://127.0.0.1:9/h", timeout_seconds=None,
                                         max_concurrency=None, stateful=False, new_secret=new_handler_secret())


async def enqueue(db: Database, jobs: list[NewJob]) -> list[uuid.UUID]:
    service = EnqueueService(db, EnqueueLimits(max_payload_bytes=1_048_576))
    ids: list[uuid.UUID] = []
    for start in range(0, len(jobs), 1000):
        ids += [r.execution.id for r in await service.enqueue(jobs[start:start + 1000])]
    return ids


async def claim(db: Database, n: int = 10, queues: list[str] | None = None, node: str = "node-1") -> list:
    async with db.transaction() as conn:
        return await repo.claim(conn, node, n, queues or [], default_timeout=60.0)


def job(i: int = 0, **kw: object) -> NewJob:
    return NewJob(handler="h", job_id=f"job-{i}", **kw)  # type: ignore[arg-type]


# --- EXPLAIN -----------------------------------------------------------------------------------

async def explain(db: Database, queues: list[str] | None = None, n: int = 10, analyze: bool = False) -> str:
    """The plans of every statement jobwire_claim runs (auto_explain, nested statements, sent to
    this session as notices), from a claim that is rolled back."""
    notices: list[str] = []
    async with db.pool.acquire() as conn:

        def listen(_conn: object, message: Any) -> None:
            notices.append(message.message)

        conn.add_log_listener(listen)
        transaction = conn.transaction()
        await transaction.start()
        try:
            for setting in ("LOAD 'auto_explain'", "SET LOCAL auto_explain.log_min_duration = 0",
                            "SET LOCAL auto_explain.log_nested_statements = on",
                            "SET LOCAL auto_explain.log_level = 'notice'",
                            f"SET LOCAL auto_explain.log_analyze = {'on' if analyze else 'off'}"):
                await conn.execute(setting)
            await repo.claim(conn, "explain-node", n, queues or [], default_timeout=60.0)
        finally:
            await transaction.rollback()
            conn.remove_log_listener(listen)
    return "\n".join(notices)


async def seed_for_explain(db: Database) -> None:
    """Thousands of finished rows and a few hundred ENQUEUED ones over many queues, then ANALYZE:
    a tiny table always gets a sequential scan."""
    async with db.transaction() as conn:
        await conn.execute("""
            INSERT INTO job_executions (job_id, job_type, handler, queue, state, priority, scheduled_at)
            SELECT 'old-' || g, 'DELAYED', 'h', 'q' || (g % 20),
                   (ARRAY['SUCCEEDED', 'DEAD_LETTER', 'CANCELLED'])[1 + g % 3], g % 5,
                   now() - make_interval(secs => g)
            FROM generate_series(1, 6000) AS g
        """)
        await conn.execute("""
            INSERT INTO job_executions (job_id, job_type, handler, queue, state, priority, scheduled_at)
            SELECT 'new-' || g, 'DELAYED', 'h', 'q' || (g % 20), 'ENQUEUED', g % 5,
                   now() - make_interval(secs => g)
            FROM generate_series(1, 400) AS g
        """)
        await conn.execute("ANALYZE job_executions")


def uses_index(plan: str, index: str) -> bool:
    return re.search(rf"(Index Scan using|Index Only Scan using|Bitmap Index Scan on) {index}\b", plan) is not None


async def test_claim_all_queues_uses_its_partial_index(db: Database) -> None:
    await add_handler(db)
    await seed_for_explain(db)
    plan = await explain(db)
    assert uses_index(plan, "ix_job_executions_claim_all"), plan
    assert "Seq Scan on job_executions" not in plan, plan


@pytest.mark.parametrize("queues", [["q3"], ["q3", "q7"]])
async def test_claim_of_named_queues_uses_its_partial_index(db: Database, queues: list[str]) -> None:
    await add_handler(db)
    await seed_for_explain(db)
    plan = await explain(db, queues)
    assert uses_index(plan, "ix_job_executions_claim"), plan
    assert "Seq Scan on job_executions" not in plan, plan


# --- order and due-ness ------------------------------------------------------------------------

async def test_claim_order_is_priority_desc_then_scheduled_at(db: Database) -> None:
    await add_handler(db)
    base = datetime.now(UTC) - timedelta(hours=1)
    specs = [(0, 5), (10, 3), (0, 1), (10, 7), (-3, 0), (5, 2), (10, 1), (5, 9)]  # (priority, minutes)
    ids = await enqueue(db, [job(i, priority=p, run_at=base + timedelta(minutes=m)) for i, (p, m) in enumerate(specs)])
    expected = [ids[i] for i in sorted(range(len(specs)), key=lambda i: (-specs[i][0], specs[i][1]))]

    claimed = []
    while batch := await claim(db, n=3):
        claimed += [c.id for c in batch]
    assert claimed == expected


async def test_one_batch_is_returned_sorted_best_first(db: Database) -> None:
    # UPDATE … FROM returns rows in join order; the statement sorts the batch itself.
    await add_handler(db)
    base = datetime.now(UTC) - timedelta(hours=1)
    jobs = [job(i, priority=i % 4, run_at=base + timedelta(seconds=100 - i)) for i in range(40)]
    priority = {j.job_id: j.priority for j in jobs}
    await enqueue(db, jobs)
    batch = await claim(db, n=40)
    keys = [(-priority[c.job_id], c.scheduled_at) for c in batch]
    assert len(batch) == 40
    assert keys == sorted(keys)


async def test_claim_takes_at_most_n_jobs(db: Database) -> None:
    await add_handler(db)
    await enqueue(db, [job(i) for i in range(7)])
    assert len(await claim(db, n=5)) == 5
    assert len(await claim(db, n=5)) == 2
    assert await claim(db, n=5) == []


async def test_future_dated_jobs_are_not_claimed(db: Database) -> None:
    await add_handler(db)
    now = datetime.now(UTC)
    due, later, delayed = await enqueue(db, [
        job(1, run_at=now - timedelta(seconds=30)),
        job(2, run_at=now + timedelta(hours=1)),
        job(3, delay_seconds=3600.0),
    ])
    assert [c.id for c in await claim(db, n=10)] == [due]
    assert await claim(db, n=10) == []
    async with db.transaction() as conn:
        assert (await repo.get(conn, later)).state == "ENQUEUED"  # type: ignore[union-attr]
        assert (await repo.get(conn, delayed)).state == "ENQUEUED"  # type: ignore[union-attr]


async def test_claim_of_named_queues_leaves_other_queues_alone(db: Database) -> None:
    await add_handler(db)
    ids = await enqueue(db, [job(1, queue="emails"), job(2, queue="reports"), job(3, queue="default")])
    assert {c.id for c in await claim(db, queues=["emails", "reports"])} == {ids[0], ids[1]}
    assert [c.id for c in await claim(db, queues=[])] == [ids[2]]


async def test_claim_sets_processing_lock_start_and_deadline_and_writes_no_event(db: Database) -> None:
    await add_handler(db)
    [execution_id] = await enqueue(db, [job(1, timeout_seconds=30.0)])
    [claimed] = await claim(db, node="node-x")
    assert claimed.id == execution_id
    assert claimed.handler_url == "http://127.0.0.1:9/h" and claimed.handler_secret
    assert 25.0 < claimed.seconds_left <= 30.0
    assert claimed.deadline_at - claimed.started_at == timedelta(seconds=30)
    async with db.transaction() as conn:
        row = await repo.get(conn, execution_id)
        events = [e["new_state"] for e in await repo.events(conn, execution_id)]
    assert row is not None and row.state == "PROCESSING" and row.locked_by == "node-x"
    assert row.started_at == claimed.started_at and row.deadline_at == claimed.deadline_at
    # Neither the insert nor the claim writes an event row (DESIGN §8): the live row shows the attempt.
    assert events == []


async def test_deadline_falls_back_to_the_handler_timeout_then_the_default(db: Database) -> None:
    async with db.transaction() as conn:
        await HandlerRepository().upsert(conn, name="slow", url="http://127.0.0.1:9/s", timeout_seconds=45.0,
                                         max_concurrency=None, stateful=False, new_secret=new_handler_secret())
    await add_handler(db)
    await enqueue(db, [NewJob(handler="slow", job_id="a", priority=1), job(2)])
    by_handler = {c.handler: c for c in await claim(db, n=2)}
    assert by_handler["slow"].deadline_at - by_handler["slow"].started_at == timedelta(seconds=45)
    assert by_handler["h"].deadline_at - by_handler["h"].started_at == timedelta(seconds=60)  # default_timeout


async def test_deadline_is_capped_by_max_duration(db: Database) -> None:
    await add_handler(db)
    await enqueue(db, [job(1, timeout_seconds=300.0, max_duration_seconds=10.0)])
    [claimed] = await claim(db)
    assert claimed.deadline_at - claimed.started_at == timedelta(seconds=10)


async def test_the_short_claim_takes_what_the_full_claim_would(db: Database) -> None:
    # With no claim rule in play jobwire_claim runs a shorter statement (revision 20261130_0007);
    # a paused queue elsewhere puts the full one in play. Both, on the same rows, claim the same
    # jobs in the same order with the same fields.
    await add_handler(db)
    base = datetime.now(UTC) - timedelta(hours=1)
    await enqueue(db, [job(i, priority=i % 3, queue=("a", "b")[i % 2], run_at=base + timedelta(seconds=i),
                           timeout_seconds=(None, 30.0)[i % 2], max_duration_seconds=(None, 10.0)[i % 3 == 0])
                       for i in range(30)])

    async def claimed(queues: list[str]) -> list[tuple[object, ...]]:
        async with rolled_back(db) as conn:
            batch = await repo.claim(conn, "node-1", 12, queues, default_timeout=60.0)
        return [(c.id, c.job_id, c.queue, c.attempt, c.scheduled_at, (c.deadline_at - c.started_at).total_seconds(),
                 c.handler_url, c.handler_secret) for c in batch]

    short = [await claimed([]), await claimed(["b"])]
    async with db.transaction() as conn:
        await conn.execute("INSERT INTO job_queues (name, paused) VALUES ('elsewhere', true)")
    full = [await claimed([]), await claimed(["b"])]
    assert len(short[0]) == 12 and {c[2] for c in short[1]} == {"b"}
    assert short == full


# --- concurrency -------------------------------------------------------------------------------

async def test_eight_claimers_never_claim_one_job_twice(db: Database) -> None:
    await add_handler(db)
    ids = await enqueue(db, [job(i, priority=i % 3) for i in range(2000)])

    async def claimer(node: str) -> list[uuid.UUID]:
        mine: list[uuid.UUID] = []
        while True:
            # Each batch is its own transaction on its own pooled connection, committed at once.
            async with db.transaction() as conn:
                batch = await repo.claim(conn, node, 10, [], default_timeout=60.0)
            if not batch:
                return mine
            mine += [c.id for c in batch]

    results = await asyncio.gather(*(claimer(f"node-{i}") for i in range(8)))
    claimed = [i for r in results for i in r]
    counts = Counter(claimed)
    assert [i for i, n in counts.items() if n > 1] == []
    assert set(claimed) == set(ids) and len(claimed) == 2000
    assert sum(1 for r in results if r) > 1, "the claimers did not run concurrently"

    # The claim writes no event row (DESIGN §8), so the database's side of "once each" is the rows
    # themselves: each PROCESSING at attempt 0, locked by the one claimer that got it back. A job
    # claimed twice would be locked by the later claimer, which the earlier one's list contradicts.
    async with db.transaction() as conn:
        by_node = dict(await fetch(conn,
            "SELECT locked_by, count(*) FROM job_executions WHERE state = 'PROCESSING' GROUP BY locked_by"
        ))
        locks = {r["id"]: (r["state"], r["attempt"], r["locked_by"]) for r in await fetch(conn,
            "SELECT id, state, attempt, locked_by FROM job_executions")}
        events = await fetchrow(conn, "SELECT count(*) FROM job_events")
    assert by_node == {f"node-{i}": len(r) for i, r in enumerate(results) if r}
    assert locks == {c: ("PROCESSING", 0, f"node-{i}") for i, r in enumerate(results) for c in r}
    assert tuple(events) == (0,)
