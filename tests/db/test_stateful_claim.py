"""The claim with stateful jobs, handler concurrency limits and paused queues (DESIGN §6.4),
through ExecutionRepository.claim on separate connections and transactions.

A stateful job never runs while another stateful job of its queue is PROCESSING; non-stateful
jobs of that queue are not held back; the guarantee holds with many claimers at once. A handler
with max_concurrency never has more executions PROCESSING; a paused queue is not claimed from.
"""

from __future__ import annotations

import asyncio
import random
import re
import uuid
from collections import Counter, defaultdict
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any


from app.db.database import Database
from tests.repositories import ShortcutRepository
from app.db.handlers import HandlerRepository
from app.domain.dispatch import ClaimedJob
from app.domain.executions import NewJob
from app.domain.signing import new_handler_secret
from app.domain.states import JobState
from app.services.enqueue import EnqueueLimits, EnqueueService
from app.db.statements import fetchval
from tests.conftest import rolled_back, sql
from tests.db.test_claim import explain, seed_for_explain, uses_index

repo = ShortcutRepository()


# --- helpers -------------------------------------------------------------------------------

async def add_handler(db: Database, name: str = "h", *, max_concurrency: int | None = None,
                      stateful: bool = False) -> None:
    async with db.transaction() as conn:
        await HandlerRepository().upsert(conn, name=name, url=f"http://127.0.0.1:9/{name}", timeout_seconds=None,
                                         max_concurrency=max_concurrency, stateful=stateful,
                                         new_secret=new_handler_secret())


async def enqueue(db: Database, jobs: Sequence[NewJob]) -> list[uuid.UUID]:
    service = EnqueueService(db, EnqueueLimits(max_payload_bytes=1_048_576))
    ids: list[uuid.UUID] = []
    for start in range(0, len(jobs), 1000):
        ids += [r.execution.id for r in await service.enqueue(list(jobs[start:start + 1000]))]
    return ids


def job(name: str, *, queue: str = "q", stateful: bool = False, handler: str = "h", **kw: Any) -> NewJob:
    return NewJob(handler=handler, job_id=name, queue=queue, stateful=stateful, **kw)


async def claim(db: Database, n: int = 10, queues: Sequence[str] = (), node: str = "node-1") -> list[ClaimedJob]:
    async with db.transaction() as conn:
        return await repo.claim(conn, node, n, list(queues), default_timeout=60.0)


async def succeed(db: Database, claimed: Sequence[ClaimedJob]) -> None:
    async with db.transaction() as conn:
        done = await repo.succeed_many(conn, [(c.id, c.attempt, None) for c in claimed], db.notify_channel)
    assert len(done) == len(claimed)


def names(claimed: Sequence[ClaimedJob]) -> set[str]:
    return {c.job_id for c in claimed}


async def states(db: Database) -> dict[str, int]:
    return dict(await sql(db, "SELECT state, count(*) FROM job_executions GROUP BY state"))  # type: ignore[arg-type]


async def set_paused(db: Database, queue: str, paused: bool) -> None:
    await sql(db, "INSERT INTO job_queues (name, paused) VALUES (:q, :p) "
                  "ON CONFLICT (name) DO UPDATE SET paused = EXCLUDED.paused", q=queue, p=paused)


# --- one stateful job per queue ------------------------------------------------------------

async def test_a_claim_takes_one_stateful_job_of_a_queue_beside_all_its_plain_jobs(db: Database) -> None:
    await add_handler(db)
    await enqueue(db, [job("s1", stateful=True), job("s2", stateful=True), job("s3", stateful=True),
                       job("p1"), job("p2"), job("p3")])

    first = await claim(db, n=10)
    assert names(first) == {"s1", "p1", "p2", "p3"}


async def test_no_stateful_job_is_claimed_while_one_of_its_queue_is_processing(db: Database) -> None:
    await add_handler(db)
    await enqueue(db, [job("s1", stateful=True), job("s2", stateful=True)])
    [s1] = await claim(db)
    assert s1.job_id == "s1"

    await enqueue(db, [job("p-late"), job("s-late", stateful=True)])
    for node in ("node-1", "node-2"):
        assert names(await claim(db, node=node)) <= {"p-late"}  # the plain job goes, no stateful one
    assert names(await claim(db, queues=["q"])) == set()  # a claim of named queues too

    await succeed(db, [s1])
    assert names(await claim(db)) == {"s2"}


async def test_each_way_out_of_processing_frees_the_queue_for_its_next_stateful_job(db: Database) -> None:
    await add_handler(db)
    await enqueue(db, [job(f"s{i}", stateful=True, max_attempts=1) for i in range(5)])

    async def next_one() -> ClaimedJob:
        [claimed] = await claim(db)
        assert await claim(db) == []
        return claimed

    s = await next_one()
    async with db.transaction() as conn:  # failure → DEAD_LETTER
        assert await repo.fail(conn, s.id, s.attempt, cause=JobState.FAILED, error="boom",
                              error_type="handler_failed", retryable=True, delay=0.0) is not None
    s = await next_one()
    async with db.transaction() as conn:  # a user's cancel
        assert await repo.cancel(conn, s.id) is not None
    s = await next_one()
    await sql(db, "UPDATE job_executions SET deadline_at = now() - interval '1 second' WHERE id = :id", id=s.id)
    async with db.transaction() as conn:  # the deadline scan
        assert [e.id for e in await repo.abandon_past_deadline(conn, 10, error="late",
                                                               error_type="abandoned_deadline")] == [s.id]
    s = await next_one()
    async with db.transaction() as conn:  # dead-node recovery
        assert [e.id for e in await repo.abandon_held_by(conn, ["node-1"], 10, error="dead",
                                                         error_type="abandoned_node")] == [s.id]
    s = await next_one()
    assert s.job_id == "s4"


async def test_stateful_jobs_of_different_queues_are_claimed_together(db: Database) -> None:
    await add_handler(db)
    await enqueue(db, [job(f"{q}-{i}", queue=q, stateful=True) for i in range(3) for q in ("qa", "qb", "qc")])

    first = await claim(db, n=10)
    assert names(first) == {"qa-0", "qb-0", "qc-0"}
    await succeed(db, [c for c in first if c.queue != "qb"])
    assert names(await claim(db, n=10)) == {"qa-1", "qc-1"}
    assert names(await claim(db, n=10, queues=["qa", "qb", "qc"])) == set()


async def test_a_claim_of_named_queues_takes_stateful_jobs_of_those_queues_only(db: Database) -> None:
    await add_handler(db)
    await enqueue(db, [job(f"{q}-{i}", queue=q, stateful=True) for i in range(2) for q in ("qa", "qb", "qc")])
    assert names(await claim(db, queues=["qa", "qc"])) == {"qa-0", "qc-0"}
    assert names(await claim(db, queues=["qb"])) == {"qb-0"}
    assert await claim(db) == []


async def test_the_next_stateful_job_is_the_best_by_priority_then_scheduled_at(db: Database) -> None:
    await add_handler(db)
    base = datetime.now(UTC) - timedelta(hours=1)
    specs = [(0, 5), (10, 3), (0, 1), (10, 7), (-3, 0), (5, 2), (10, 1), (5, 9)]  # (priority, minutes)
    await enqueue(db, [job(f"s{i}", stateful=True, priority=p, run_at=base + timedelta(minutes=m))
                       for i, (p, m) in enumerate(specs)]
                  + [job(f"future-{p}", stateful=True, priority=100 + p, delay_seconds=3600.0) for p in range(2)])
    expected = [f"s{i}" for i in sorted(range(len(specs)), key=lambda i: (-specs[i][0], specs[i][1]))]

    order = []
    while batch := await claim(db, n=5):
        assert len(batch) == 1
        order.append(batch[0].job_id)
        await succeed(db, batch)
    assert order == expected  # future-dated stateful jobs wait, whatever their priority


async def test_a_handler_registered_stateful_makes_its_jobs_stateful(db: Database) -> None:
    await add_handler(db, "serial", stateful=True)
    await add_handler(db)
    await enqueue(db, [job("a", handler="serial"), job("b", handler="serial", stateful=False), job("c")])
    rows = dict(await sql(db, "SELECT job_id, stateful FROM job_executions"))  # type: ignore[arg-type]
    assert rows == {"a": True, "b": True, "c": False}
    assert names(await claim(db)) == {"a", "c"}


async def test_a_claim_transaction_holding_the_queue_lock_keeps_others_off_its_stateful_jobs(db: Database) -> None:
    # Claimer A's transaction is open (its claim not committed yet): B's claim sees no stateful job
    # PROCESSING, but may not take one either. It still takes the queue's plain jobs.
    await add_handler(db)
    await enqueue(db, [job("s1", stateful=True, priority=9), job("s2", stateful=True, priority=9),
                       job("p1"), job("p2"), job("p3")])
    async with db.transaction() as a:
        mine = await repo.claim(a, "node-a", 1, [], default_timeout=60.0)
        assert names(mine) == {"s1"}
        others = await claim(db, n=10, node="node-b")
        # (p1 may be row-locked by A's claim, which looked at it and kept s1: SKIP LOCKED passes it.)
        assert {"p2", "p3"} <= names(others) <= {"p1", "p2", "p3"}
        assert names(await claim(db, n=10, queues=["q"], node="node-c")) == set()
    assert names(await claim(db, n=10, node="node-b")) <= {"p1"}  # s1 is PROCESSING now

    # And when A rolls back, the queue is free again.
    await succeed(db, mine)
    async with rolled_back(db) as a:
        assert names(await repo.claim(a, "node-a", 1, [], default_timeout=60.0)) == {"s2"}
        assert await claim(db, n=10, node="node-b") == []
    assert names(await claim(db, n=10, node="node-b")) == {"s2"}


async def test_twelve_claimers_never_run_two_stateful_jobs_of_one_queue_at_once(db: Database) -> None:
    await add_handler(db)
    queues = ("qa", "qb", "qc")
    jobs = [job(f"s-{q}-{i}", queue=q, stateful=True, priority=i % 3) for i in range(100) for q in queues]
    jobs += [job(f"p-{q}-{i}", queue=q, priority=i % 4) for i in range(100) for q in queues]
    ids = await enqueue(db, jobs)
    total = len(ids)

    # Soundness of the in-process check: a job enters `running` after its claim committed and
    # leaves before its success starts to commit, so two entries for one queue at once mean two
    # stateful executions of that queue really were PROCESSING together.
    running: dict[str, set[uuid.UUID]] = defaultdict(set)
    overlaps: list[tuple[str, int]] = []
    most_at_once: Counter[str] = Counter()
    claimed_ids: list[uuid.UUID] = []
    done = 0
    stop = asyncio.Event()

    async def claimer(node: str) -> None:
        nonlocal done
        while done < total:
            async with db.transaction() as conn:
                batch = await repo.claim(conn, node, 5, [], default_timeout=60.0)
            if not batch:
                await asyncio.sleep(0.001)
                continue
            claimed_ids.extend(c.id for c in batch)
            for c in batch:
                if c.job_id.startswith("s-"):
                    running[c.queue].add(c.id)
                    most_at_once[c.queue] = max(most_at_once[c.queue], len(running[c.queue]))
                    if len(running[c.queue]) > 1:
                        overlaps.append((c.queue, len(running[c.queue])))
            await asyncio.sleep(random.uniform(0, 0.004))
            for c in batch:
                running[c.queue].discard(c.id)
            async with db.transaction() as conn:
                succeeded = await repo.succeed_many(conn, [(c.id, c.attempt, None) for c in batch], db.notify_channel)
            assert len(succeeded) == len(batch)
            done += len(batch)

    samples: list[dict[str, int]] = []

    async def sampler() -> None:
        async with db.pool.acquire() as conn:
            while not stop.is_set():
                rows = await conn.fetch(
                    "SELECT queue, count(*) FROM job_executions WHERE stateful AND state = 'PROCESSING' "
                    "GROUP BY queue")
                samples.append({r[0]: r[1] for r in rows})
                await asyncio.sleep(0)

    sampling = asyncio.create_task(sampler())
    try:
        await asyncio.wait_for(asyncio.gather(*(claimer(f"node-{i}") for i in range(12))), timeout=50)
    finally:
        stop.set()
        await sampling

    assert overlaps == []
    assert [s for s in samples if any(n > 1 for n in s.values())] == []
    assert len(samples) > 20, "the sampler hardly ran"
    assert any(s for s in samples), "the sampler never saw a stateful job PROCESSING"
    assert all(most_at_once[q] == 1 for q in queues), most_at_once
    assert sorted(Counter(claimed_ids).values()) == [1] * total  # nothing claimed twice
    assert await states(db) == {"SUCCEEDED": total}


# --- max_concurrency -----------------------------------------------------------------------

async def test_concurrent_claimers_never_exceed_a_handlers_max_concurrency(db: Database) -> None:
    await add_handler(db, "limited", max_concurrency=3)
    await add_handler(db)
    ids = await enqueue(db, [job(f"l{i}", handler="limited", priority=i % 2) for i in range(50)]
                        + [job(f"h{i}") for i in range(50)])
    total = len(ids)
    running: set[uuid.UUID] = set()
    most = 0
    done = 0
    stop = asyncio.Event()

    async def claimer(node: str) -> None:
        nonlocal done, most
        while done < total:
            async with db.transaction() as conn:
                batch = await repo.claim(conn, node, 5, [], default_timeout=60.0)
            if not batch:
                await asyncio.sleep(0.001)
                continue
            limited = [c.id for c in batch if c.handler == "limited"]
            running.update(limited)
            most = max(most, len(running))
            await asyncio.sleep(random.uniform(0, 0.004))
            running.difference_update(limited)
            async with db.transaction() as conn:
                await repo.succeed_many(conn, [(c.id, c.attempt, None) for c in batch], db.notify_channel)
            done += len(batch)

    samples: list[int] = []

    async def sampler() -> None:
        async with db.pool.acquire() as conn:
            while not stop.is_set():
                samples.append(await fetchval(
                    conn, "SELECT count(*) FROM job_executions WHERE handler = 'limited' AND state = 'PROCESSING'"))
                await asyncio.sleep(0)

    sampling = asyncio.create_task(sampler())
    try:
        await asyncio.wait_for(asyncio.gather(*(claimer(f"node-{i}") for i in range(8))), timeout=50)
    finally:
        stop.set()
        await sampling
    assert most <= 3
    assert max(samples) <= 3, Counter(samples)
    assert len(samples) > 20
    assert await states(db) == {"SUCCEEDED": total}


async def test_a_handler_at_its_limit_is_not_claimed_until_a_slot_frees(db: Database) -> None:
    await add_handler(db, "limited", max_concurrency=2)
    await enqueue(db, [job(f"l{i}", handler="limited") for i in range(5)])
    first = await claim(db, n=10)
    assert names(first) == {"l0", "l1"}
    assert await claim(db, n=10) == []
    await succeed(db, first[:1])
    assert len(await claim(db, n=10)) == 1


async def test_a_handler_at_its_limit_does_not_hold_back_other_handlers(db: Database) -> None:
    # The limited handler's backlog is older (and first by priority): the claim must not let it
    # fill the batch and then drop it, leaving other handlers' due jobs unclaimed.
    await add_handler(db, "limited", max_concurrency=1)
    await add_handler(db)
    base = datetime.now(UTC) - timedelta(minutes=10)
    await enqueue(db, [job(f"l{i}", handler="limited", priority=1, run_at=base) for i in range(30)]
                  + [job(f"h{i}") for i in range(5)])
    first = await claim(db, n=5)
    assert [c.handler for c in first].count("limited") == 1
    rest = await claim(db, n=5)
    assert names(first + rest) >= {f"h{i}" for i in range(5)}, (names(first), names(rest))


async def test_a_handler_whose_lock_another_claim_holds_is_skipped(db: Database) -> None:
    await add_handler(db, "limited", max_concurrency=3)
    await add_handler(db)
    await enqueue(db, [job(f"l{i}", handler="limited", priority=5) for i in range(6)]
                  + [job(f"h{i}") for i in range(4)])
    async with rolled_back(db) as a:
        mine = await repo.claim(a, "node-a", 1, [], default_timeout=60.0)
        assert names(mine) == {"l0"}
        # B cannot count the limited handler's free slots while A holds its lock: it skips them.
        # (h0 may be row-locked by A's claim, which looked at it and kept l0: SKIP LOCKED passes it.)
        assert {"h1", "h2", "h3"} <= names(await claim(db, n=20, node="node-b")) <= {"h0", "h1", "h2", "h3"}
        assert await claim(db, n=20, node="node-c") == []
    assert names(await claim(db, n=20, node="node-b")) - {"h0"} == {"l0", "l1", "l2"}


async def test_a_limited_stateful_handler_counts_its_stateful_jobs_against_the_limit(db: Database) -> None:
    await add_handler(db, "limited", max_concurrency=2)
    await enqueue(db, [job(f"{q}{i}", queue=q, handler="limited", stateful=True) for i in range(2)
                       for q in ("qa", "qb", "qc")])
    first = await claim(db, n=10)
    assert len(first) == 2 and len({c.queue for c in first}) == 2
    assert await claim(db, n=10) == []


# --- paused queues -------------------------------------------------------------------------

async def test_a_paused_queue_is_not_claimed_from_until_resumed(db: Database) -> None:
    await add_handler(db)
    await enqueue(db, [job("p1", queue="paused"), job("s1", queue="paused", stateful=True),
                       job("o1", queue="open"), job("o2", queue="open", stateful=True)])
    await set_paused(db, "paused", True)
    assert names(await claim(db, n=10)) == {"o1", "o2"}
    assert await claim(db, n=10) == []
    assert await claim(db, n=10, queues=["paused"]) == []

    await set_paused(db, "paused", False)
    assert names(await claim(db, n=10, queues=["paused"])) == {"p1", "s1"}


async def test_an_active_queue_row_does_not_stop_claims(db: Database) -> None:
    await add_handler(db)
    await enqueue(db, [job("a", queue="active"), job("b", queue="other")])
    await set_paused(db, "active", False)
    await set_paused(db, "other", True)
    assert names(await claim(db, n=10)) == {"a"}


# --- plans ---------------------------------------------------------------------------------

async def test_the_plain_claim_still_uses_its_partial_index_beside_stateful_work(db: Database) -> None:
    await add_handler(db)
    await add_handler(db, "lim", max_concurrency=5)
    await seed_for_explain(db)
    await sql(db, "UPDATE job_executions SET stateful = true WHERE state = 'ENQUEUED' AND job_id LIKE 'new-%' "
                  "AND (substring(job_id from 5))::int % 10 = 0")
    await sql(db, "ANALYZE job_executions")
    plan = await explain(db)  # beside a limited handler, the plain ones are found handler by handler
    assert uses_index(plan, "ix_job_executions_handler_claim"), plan
    assert "Seq Scan on job_executions" not in plan, plan
    await set_paused(db, "q3", True)
    plan = await explain(db)  # with a queue paused, queue by queue
    assert uses_index(plan, "ix_job_executions_claim"), plan
    assert "Seq Scan on job_executions" not in plan, plan
    plan = await explain(db, ["q0", "q7"])
    assert uses_index(plan, "ix_job_executions_claim"), plan
    assert "Seq Scan on job_executions" not in plan, plan


async def test_a_paused_backlog_is_not_walked_by_the_claim(db: Database) -> None:
    await add_handler(db)
    await set_paused(db, "held", True)
    await sql(db, """
        INSERT INTO job_executions (job_id, job_type, handler, queue, state, scheduled_at)
        SELECT 'held-' || g, 'DELAYED', 'h', 'held', 'ENQUEUED', now() - interval '1 day' + g * interval '1 ms'
        FROM generate_series(1, 3000) AS g""")
    await sql(db, "ANALYZE job_executions")
    plan = await explain(db, analyze=True)
    assert "Recursive Union" in plan, plan  # the queues were found by the loose index scan
    removed = [int(n) for n in re.findall(r"Rows Removed by Filter: (\d+)", plan)]
    assert max(removed, default=0) < 100, plan
    assert await claim(db) == []
    await enqueue(db, [job("ready", queue="open")])
    assert names(await claim(db)) == {"ready"}


async def test_a_limited_handlers_jobs_are_found_through_an_index_on_handler(db: Database) -> None:
    await add_handler(db)
    await add_handler(db, "limited", max_concurrency=5)
    await seed_for_explain(db)
    plan = await explain(db)
    # Its jobs are picked (jobwire_claim_pick) in the order of the index on handler, priority, turn.
    # (A session that ran it before may hold its generic plan: the handler is $1 there.)
    assert re.search(r"Index Scan using ix_job_executions_handler_claim on job_executions e\s.*\n\s*Index Cond: "
                     r"\(\(handler = ('limited'::text|\$\d+)\)", plan), plan
