"""What a claim reads, whatever plan PostgreSQL settles on for the statements of jobwire_claim
(plpgsql caches them; after a few calls it may keep a generic plan, made without the parameters
and often while the tables are small). Counted in the transaction's own table statistics
(pg_stat_xact_user_tables) with the generic plans forced:

- a claim of workflow jobs reads each one's parents by key: a claim of 100 scans job_executions no
  more often than a claim of 10 (the generic plan of a join hashed the whole table once per
  claimed job: quadratic in the backlog);
- the handlers' signing secrets are read once per claim, not once per claimed job.
The tables are as the workflow's insert left them, not analysed since (as for a node claiming
right after a burst of enqueues)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any
from uuid import UUID

import orjson
import pytest

from app.db.database import Connection, Database
from app.db.executions import ExecutionRepository
from app.db.handlers import HandlerRepository
from app.domain.executions import NewJob
from app.domain.signing import new_handler_secret
from app.domain.workflows import NewWorkflow, WorkflowJob
from app.services.enqueue import EnqueueLimits
from app.services.workflows import WorkflowService

repo = ExecutionRepository()
CHILDREN = 200

READS = """
SELECT relname, seq_scan, idx_scan FROM pg_stat_xact_user_tables
WHERE relname IN ('job_executions', 'job_handler_secrets')
"""
Reads = dict[str, tuple[int, int]]


async def reads(conn: Connection) -> Reads:
    return {r["relname"]: (r["seq_scan"], r["idx_scan"] or 0) for r in await conn.fetch(READS)}


def more(before: Reads, after: Reads, table: str) -> tuple[int, int, int]:
    """Sequential scans and index scans of `table` between the two readings."""
    b, a = before.get(table, (0, 0)), after.get(table, (0, 0))
    return a[0] - b[0], a[1] - b[1]


@pytest.fixture
async def fan(db: Database) -> list[UUID]:
    """A root with CHILDREN children, the root claimed and succeeded: the children ENQUEUED, due.
    Their ids."""
    async with db.transaction() as conn:
        await HandlerRepository().upsert(conn, name="h", url="http://127.0.0.1:9/h", timeout_seconds=None,
                                         max_concurrency=None, stateful=False, new_secret=new_handler_secret())
    jobs = [WorkflowJob(ref="root", job=NewJob(handler="h", job_id="root", payload={}))] + [
        WorkflowJob(ref=f"c{i}", job=NewJob(handler="h", job_id=f"c{i}", payload={"i": i}), depends_on=("root",))
        for i in range(CHILDREN)]
    made = await WorkflowService(db, EnqueueLimits(max_payload_bytes=1 << 20)).create(NewWorkflow(jobs=tuple(jobs)))
    async with db.transaction() as conn:
        [root] = await repo.claim(conn, "node-1", 10, [], default_timeout=600.0)
        await repo.succeed_attempts(conn, [(root.id, root.attempt, {"ok": True})], "jobwire_test")
    return [i.execution_id for i in made.items if i.ref != "root"]


async def generic(conn: Connection) -> None:
    await conn.execute("SET LOCAL plan_cache_mode = force_generic_plan")


async def claimed_with_reads(conn: Connection, n: int) -> tuple[Sequence[Any], Reads, Reads]:
    before = await reads(conn)
    claimed = await repo.claim(conn, "node-1", n, [], default_timeout=600.0)
    return claimed, before, await reads(conn)


async def test_a_claim_of_workflow_jobs_reads_their_parents_by_key_and_the_secrets_once(
        db: Database, fan: list[UUID]) -> None:
    async with db.transaction() as conn:
        await generic(conn)
        few, before_few, after_few = await claimed_with_reads(conn, 10)
        many, before_many, after_many = await claimed_with_reads(conn, 100)
    assert (len(few), len(many)) == (10, 100)
    assert {c.id for c in few + many} <= set(fan)
    assert all(c.workflow is not None and list(orjson.loads(orjson.dumps(c.workflow))["parents"]) == ["root"]
               for c in few + many)
    assert more(before_many, after_many, "job_executions")[0] == more(before_few, after_few, "job_executions")[0]
    assert sum(more(before_few, after_few, "job_handler_secrets")) == 1
    assert sum(more(before_many, after_many, "job_handler_secrets")) == 1
