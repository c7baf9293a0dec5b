"""The database itself refuses a second PROCESSING stateful execution in one queue, and the
claim protocol (a per-queue advisory lock taken before the claim's snapshot) never runs into it."""

from __future__ import annotations

import asyncpg
import pytest

from app.db.database import Database
from app.db.executions import ExecutionRepository
from app.db.handlers import HandlerRepository
from app.domain.executions import NewJob
from app.services.enqueue import EnqueueLimits, EnqueueService

repo = ExecutionRepository()


async def seed(db: Database, jobs: list[NewJob]) -> None:
    async with db.transaction() as conn:
        await HandlerRepository().upsert(conn, name="h", url="http://127.0.0.1:9/h", timeout_seconds=None,
                                         max_concurrency=None, stateful=False, new_secret="whsec_AAAA")
    await EnqueueService(db, EnqueueLimits(1_048_576)).enqueue(jobs)


async def test_a_second_processing_stateful_row_in_one_queue_is_a_unique_violation(db: Database) -> None:
    await seed(db, [NewJob(handler="h", job_id=f"s{i}", queue="q", stateful=True) for i in range(2)])
    with pytest.raises(asyncpg.UniqueViolationError, match="uq_job_executions_stateful_processing"):
        async with db.transaction() as conn:
            await conn.execute("UPDATE job_executions SET state = 'PROCESSING' WHERE queue = 'q'")


async def test_stateful_rows_of_different_queues_may_process_together(db: Database) -> None:
    await seed(db, [NewJob(handler="h", job_id=f"s{i}", queue=f"q{i}", stateful=True) for i in range(2)])
    async with db.transaction() as conn:
        await conn.execute("UPDATE job_executions SET state = 'PROCESSING'")


async def test_a_claim_racing_another_for_a_stateful_queue_skips_it_and_claims_the_rest(db: Database) -> None:
    await seed(db, [NewJob(handler="h", job_id="s", queue="q", stateful=True),
                    NewJob(handler="h", job_id="plain", queue="q")])
    async with db.pool.acquire() as rival:
        # Another claimer holds the queue's lock (as inside its claim transaction) ...
        rival_tx = rival.transaction()
        await rival_tx.start()
        await rival.execute(
            "SELECT pg_advisory_xact_lock(hashtext('jobwire:' || current_schema()), hashtext('queue:q'))")
        async with db.transaction() as conn:
            claimed = await repo.claim(conn, "node-1", 10, (), 60.0)
        # ... so this claim takes the non-stateful job and leaves the stateful one, without error.
        assert [j.job_id for j in claimed] == ["plain"]
        await rival_tx.rollback()
    async with db.transaction() as conn:
        assert [j.job_id for j in await repo.claim(conn, "node-1", 10, (), 60.0)] == ["s"]
