"""Hot statements read by key, whatever plan PostgreSQL settles on: plpgsql and asyncpg cache
plans, made from the statistics of their time (a generic plan, without the parameters, and often
while the tables are small; or statistics taken before a burst). Counted in the transaction's own
table statistics (pg_stat_xact_user_tables):

- a claim of workflow jobs (its generic plans forced) reads each one's parents by key: a claim of
  100 scans job_executions no more often than a claim of 10 (the generic plan of a join hashed
  the whole table once per claimed job: quadratic in the backlog); the handlers' signing secrets
  are read once per claim, not once per claimed job (the tables as the workflow's insert left
  them, not analysed since, as for a node claiming right after a burst of enqueues);
- a 202's release, and a batch of successes, of 500 jobs among 17,000 in flight fetch about two
  rows by index per job (the statistics taken before the burst of claims);
- an event delivery's lease checks each candidate's earlier events by key, not by rescanning the
  subscription's open deliveries per candidate (the statistics taken before the backlog)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any
from uuid import UUID

import orjson
import pytest

from app.db.database import Connection, Database
from app.db.executions import ExecutionRepository
from app.db.handlers import HandlerRepository
from app.db.subscriptions import DeliveryRepository, SubscriptionRepository
from app.domain.executions import NewJob
from app.domain.signing import new_handler_secret
from app.domain.subscriptions import SubscriptionSpec
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


def more(before: Reads, after: Reads, table: str) -> tuple[int, int]:
    """Sequential scans and index scans of `table` between the two readings."""
    b, a = before.get(table, (0, 0)), after.get(table, (0, 0))
    return a[0] - b[0], a[1] - b[1]


async def handler(db: Database) -> None:
    """The handler `h` every job here names."""
    async with db.transaction() as conn:
        await HandlerRepository().upsert(conn, name="h", url="http://127.0.0.1:9/h", timeout_seconds=None,
                                         max_concurrency=None, stateful=False, new_secret=new_handler_secret())


@pytest.fixture
async def fan(db: Database) -> list[UUID]:
    """A root with CHILDREN children, the root claimed and succeeded: the children ENQUEUED, due.
    Their ids."""
    await handler(db)
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


# --- outcomes among many calls in flight -----------------------------------------------------

BACKLOG = 20_000
IN_FLIGHT = 17_000
BATCH = 500


async def in_flight_after_stale_statistics(db: Database, locked: int) -> list[UUID]:
    """BACKLOG jobs enqueued and the statistics taken then (none in flight: a burst of enqueues,
    before autovacuum looks again); then IN_FLIGHT of them claimed, the first `locked` still held
    by node-1, the others handed to their handler (a 202). Their ids, in id order."""
    await handler(db)
    async with db.transaction() as conn:
        await conn.execute(
            "INSERT INTO job_executions (job_id, job_type, handler, queue, state) "
            "SELECT 'j' || g, 'DELAYED', 'h', 'default', 'ENQUEUED' FROM generate_series(1, $1) AS g", BACKLOG)
    async with db.pool.acquire() as conn:  # VACUUM runs outside a transaction
        await conn.execute("VACUUM ANALYZE job_executions")
    async with db.transaction() as conn:
        ids = [r["id"] for r in await conn.fetch(
            "UPDATE job_executions SET state = 'PROCESSING', attempt = 0, started_at = now(), claimed_by = 'node-1' "
            "WHERE id IN (SELECT id FROM job_executions ORDER BY id LIMIT $1) RETURNING id", IN_FLIGHT)]
        await conn.execute("UPDATE job_executions SET locked_by = 'node-1' WHERE id = ANY($1::uuid[])",
                           sorted(ids)[:locked])
    return sorted(ids)


async def fetched_by_index(conn: Connection, table: str = "job_executions") -> int:
    return await conn.fetchval("SELECT idx_tup_fetch FROM pg_stat_xact_user_tables WHERE relname = $1", table)


async def test_a_202_release_reads_its_jobs_by_key_among_thousands_in_flight(db: Database) -> None:
    """Releasing 500 jobs to their handler (a 202 each) fetches about two rows by index per job.
    Through the partial indexes of PROCESSING rows, which the statistics say are empty, the
    locking read every row in flight, and on PostgreSQL 18 the update did so again for each row
    of the batch (the bench's callback drain: 424 ms for one release of 256)."""
    ids = await in_flight_after_stale_statistics(db, locked=BATCH)
    async with db.transaction() as conn:
        before = await fetched_by_index(conn)
        released = await repo.release_to_handler(conn, "node-1", [(i, 0) for i in ids[:BATCH]])
        after = await fetched_by_index(conn)
    assert sorted(released) == ids[:BATCH]
    assert after - before < 4 * BATCH  # about two a row: the locking read and the update


async def test_a_batch_of_successes_reads_its_jobs_by_key_among_thousands_in_flight(db: Database) -> None:
    """The dispatcher's outcome batch of 500 successes fetches about two rows by index per job.
    Through ix_job_executions_state_created, which the statistics say holds no PROCESSING row, the
    update read all 17,000 in flight and joined each with the batch (3.8 s for one batch)."""
    ids = await in_flight_after_stale_statistics(db, locked=BATCH)
    async with db.transaction() as conn:
        before = await fetched_by_index(conn)
        succeeded = await repo.succeed_quietly(conn, [(i, 0, {"ok": True}) for i in ids[:BATCH]], "jobwire_test")
        after = await fetched_by_index(conn)
    assert succeeded == BATCH
    assert after - before < 4 * BATCH


# --- an event delivery's lease, with a backlog open --------------------------------------------

OPEN = 4_000


async def test_a_delivery_lease_finds_each_executions_earlier_events_by_key_with_thousands_open(
        db: Database) -> None:
    """The statistics taken while the subscription had no delivery, then 4,000 open ones (two
    events each of 2,000 executions): a lease of 16 fetches a few rows by index per delivery it
    leases, not every open delivery of the subscription for each (the check that no earlier event
    of the execution is still open, as NOT EXISTS, rescanned them all per candidate)."""
    async with db.transaction() as conn:
        spec = SubscriptionSpec(url="http://127.0.0.1:9/e")
        assert await SubscriptionRepository().upsert(conn, "s", spec, "whsec_" + "A" * 44, None)
    async with db.pool.acquire() as conn:  # VACUUM runs outside a transaction
        await conn.execute("VACUUM ANALYZE job_event_deliveries")
    async with db.transaction() as conn:
        await conn.execute(
            "INSERT INTO job_event_deliveries (subscription, event_id, execution_id, type, occurred_at, data) "
            "SELECT 's', g, md5(CAST(g % $1 AS text))::uuid, 'execution.succeeded', now(), '{}' "
            "FROM generate_series(1, $2) AS g", OPEN // 2, OPEN)
    async with db.transaction() as conn:
        before = await fetched_by_index(conn, "job_event_deliveries")
        leased = await DeliveryRepository().claim(conn, 16, 30.0)
        after = await fetched_by_index(conn, "job_event_deliveries")
    assert len(leased) == 16
    assert all(d.item["id"] <= OPEN // 2 for d in leased)  # each its execution's first event
    assert after - before < 100 * 16
