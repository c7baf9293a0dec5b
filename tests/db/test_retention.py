"""Retention against the real database: which executions the pruner deletes and when (each
class and its cutoff, 0 keeps forever, live rows never), what goes with them (logs, steps,
events, the idempotency key), batches of at most 1,000 rows that loop until nothing is due,
racing pruners and row locks (SKIP LOCKED), a pruned cron fire never fired again, the purge's
guard, and the plan of the prune statement on a large table."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any
from uuid import UUID

import pytest

from app.db.connection import DatabaseConfig
from app.db.database import Database
from app.db.executions import ExecutionRepository
from tests.repositories import ShortcutRepository
from app.db.handlers import HandlerRepository
from app.db.retention import FIRST_KEY, Q, RetentionRepository
from app.db.statements import execute
from app.domain.executions import NewJob
from app.domain.schedules import ScheduleSpec
from app.domain.states import JobState
from app.services.enqueue import EnqueueLimits, EnqueueService
from app.services.retention import PruneConfig, PruneService, PurgeService
from app.services.schedules import ScheduleLimits, ScheduleService
from app.services.scheduling import SchedulingConfig, SchedulingService
from tests.conftest import scalar, sql

DAY = 86400.0
WEEK, MONTH = 7 * DAY, 30 * DAY
S = JobState


def pruner(db: Database, succeeded: float = WEEK, failed: float = MONTH, batch_size: int = 1000) -> PruneService:
    return PruneService(db, PruneConfig(retention_succeeded=succeeded, retention_failed=failed,
                                        batch_size=batch_size))


@pytest.fixture
async def h(db: Database) -> str:
    async with db.transaction() as conn:
        await HandlerRepository().upsert(conn, name="h", url="http://127.0.0.1:9/h", timeout_seconds=None,
                                         max_concurrency=None, stateful=False, new_secret="whsec_dGVzdA==")
    return "h"


async def enqueue(db: Database, **kw: Any) -> UUID:
    [done] = await EnqueueService(db, EnqueueLimits(1_048_576)).enqueue([NewJob(handler="h", job_id="j", **kw)])
    return done.execution.id


async def finished(db: Database, state: S, *, completed_days_ago: float, created_days_ago: float | None = None,
                   cron: bool = False, **kw: Any) -> UUID:
    """An execution enqueued through the API's path, then moved to `state` as if it finished
    `completed_days_ago` (with an event for it, a log entry and a step)."""
    execution_id = await enqueue(db, **kw)
    created = completed_days_ago if created_days_ago is None else created_days_ago
    await sql(db, """
        WITH u AS (
            UPDATE job_executions
            SET state = :state, job_type = CASE WHEN :cron THEN 'CRON' ELSE job_type END,
                fire_at = CASE WHEN :cron THEN now() ELSE fire_at END,
                created_at = now() - make_interval(secs => CAST(:created AS float8) * 86400),
                completed_at = CASE WHEN :state IN ('ENQUEUED', 'PROCESSING') THEN NULL
                               ELSE now() - make_interval(secs => CAST(:completed AS float8) * 86400) END
            WHERE id = :id RETURNING id
        ), ev AS (
            INSERT INTO job_events (execution_id, event)
            SELECT id, jsonb_build_object('execution_id', id, 'new_state', CAST(:state AS text)) FROM u
        ), lg AS (
            INSERT INTO job_logs (execution_id, attempt, level, message) SELECT id, 0, 'INFO', 'hello' FROM u
        )
        INSERT INTO job_steps (execution_id, name, result) SELECT id, 'step-1', '1' FROM u
        """, id=execution_id, state=state.value, cron=cron, created=float(created),
        completed=float(completed_days_ago))
    return execution_id


async def seed(db: Database, state: S, n: int, *, days_ago: float, job_type: str = "DELAYED",
               events: bool = True, same_instant: bool = False) -> None:
    """n executions inserted at once (as a bench would), finished `days_ago`, each with one event.
    same_instant: all created at the same instant (as one batch enqueue: created_at ties)."""
    await sql(db, """
        WITH u AS (
            INSERT INTO job_executions (job_id, job_type, handler, queue, state, fire_at, fire_node, created_at,
                                        completed_at, scheduled_at)
            SELECT 'seed-' || g, :job_type, 'h', 'default', :state,
                   CASE WHEN :job_type = 'CRON' THEN now() - make_interval(secs => g) END,
                   '',
                   now() - make_interval(secs => CAST(:days AS float8) * 86400 + CASE WHEN :same THEN 0 ELSE g END),
                   CASE WHEN :state IN ('ENQUEUED', 'PROCESSING') THEN NULL
                        ELSE now() - make_interval(secs => CAST(:days AS float8) * 86400) END,
                   now()
            FROM generate_series(1, :n) AS g
            RETURNING id
        )
        INSERT INTO job_events (execution_id, event)
        SELECT id, jsonb_build_object('execution_id', id, 'new_state', CAST(:state AS text)) FROM u WHERE :events
        """, n=n, state=state.value, days=float(days_ago), job_type=job_type, events=events, same=same_instant)


async def count(db: Database, table: str, **where: Any) -> int:
    clause = " AND ".join(f"{k} = :{k}" for k in where) or "true"
    return await scalar(db, f"SELECT count(*) FROM {table} WHERE {clause}", **where)


async def exists(db: Database, execution_id: UUID) -> bool:
    return await count(db, "job_executions", id=execution_id) == 1


async def trace(db: Database, execution_id: UUID) -> tuple[int, int, int]:
    """(events, logs, steps) of an execution."""
    return (await count(db, "job_events", execution_id=execution_id),
            await count(db, "job_logs", execution_id=execution_id),
            await count(db, "job_steps", execution_id=execution_id))


# --- what is due, and what goes with it -------------------------------------------------------

async def test_succeeded_executions_go_after_their_retention_with_their_logs_steps_and_events(db, h):
    old = await finished(db, S.SUCCEEDED, completed_days_ago=8)
    young = await finished(db, S.SUCCEEDED, completed_days_ago=6)
    assert await trace(db, old) == (1, 1, 1)  # the event added (the enqueue writes none: DESIGN §8)

    report = await pruner(db).run()

    assert report.deleted == {S.SUCCEEDED: 1}
    assert not await exists(db, old) and await trace(db, old) == (0, 0, 0)
    assert await exists(db, young) and await trace(db, young) == (1, 1, 1)


async def test_cancelled_dead_letter_and_abandoned_cron_fires_go_after_the_failed_retention(db, h):
    due = {state: await finished(db, state, completed_days_ago=31, cron=state is S.ABANDONED)
           for state in (S.CANCELLED, S.DEAD_LETTER, S.ABANDONED)}
    kept = [await finished(db, state, completed_days_ago=29, cron=state is S.ABANDONED)
            for state in (S.CANCELLED, S.DEAD_LETTER, S.ABANDONED)]
    succeeded_in_between = await finished(db, S.SUCCEEDED, completed_days_ago=6)

    report = await pruner(db).run()

    assert report.deleted == {S.CANCELLED: 1, S.DEAD_LETTER: 1, S.ABANDONED: 1}
    for execution_id in due.values():
        assert not await exists(db, execution_id) and await trace(db, execution_id) == (0, 0, 0)
    for execution_id in [*kept, succeeded_in_between]:
        assert await exists(db, execution_id) and await trace(db, execution_id) == (1, 1, 1)


async def test_each_class_has_its_own_cutoff(db, h):
    """A short success retention and a long failure retention (and the other way round)."""
    s = await finished(db, S.SUCCEEDED, completed_days_ago=2)
    d = await finished(db, S.DEAD_LETTER, completed_days_ago=2)
    await pruner(db, succeeded=DAY, failed=MONTH).run()
    assert not await exists(db, s) and await exists(db, d)
    await pruner(db, succeeded=MONTH, failed=DAY).run()
    assert not await exists(db, d)


async def test_failed_executions_and_abandoned_delayed_rows_are_never_pruned(db, h):
    """FAILED is not terminal (a retry moves it on), and only cron fires rest in ABANDONED."""
    failed = await finished(db, S.FAILED, completed_days_ago=400)
    abandoned_delayed = await finished(db, S.ABANDONED, completed_days_ago=400)
    report = await pruner(db, succeeded=1, failed=1).run()
    assert report.total == 0
    assert await exists(db, failed) and await exists(db, abandoned_delayed)


async def test_an_old_execution_that_finished_recently_is_kept(db, h):
    """The cutoff is on completed_at; created_at only bounds the index range."""
    long_running = await finished(db, S.SUCCEEDED, completed_days_ago=1, created_days_ago=60)
    assert (await pruner(db).run()).total == 0
    assert await exists(db, long_running)


async def test_zero_keeps_forever(db, h):
    s = await finished(db, S.SUCCEEDED, completed_days_ago=3650)
    c = await finished(db, S.CANCELLED, completed_days_ago=3650)
    a = await finished(db, S.ABANDONED, completed_days_ago=3650, cron=True)

    assert (await pruner(db, succeeded=0).run()).deleted == {S.CANCELLED: 1, S.ABANDONED: 1}
    assert await exists(db, s)
    c2 = await finished(db, S.CANCELLED, completed_days_ago=3650)
    report = await pruner(db, succeeded=WEEK, failed=0).run()
    assert report.deleted == {S.SUCCEEDED: 1}
    assert await exists(db, c2)
    assert not await exists(db, c) and not await exists(db, a)

    none = await pruner(db, succeeded=0, failed=0).run()
    assert none.total == 0 and none.batches == []  # not one statement


async def test_live_executions_and_their_events_are_never_touched(db, h):
    """Even created long ago (and with a stray completed_at), with the shortest retention."""
    enqueued = await finished(db, S.ENQUEUED, completed_days_ago=400)
    processing = await finished(db, S.PROCESSING, completed_days_ago=400)
    await sql(db, "UPDATE job_executions SET completed_at = now() - interval '400 days'")
    await seed(db, S.ENQUEUED, 50, days_ago=400)
    live_events = await count(db, "job_events")

    report = await pruner(db, succeeded=0.001, failed=0.001).run()

    assert report.total == 0
    assert await count(db, "job_executions") == 52
    assert await count(db, "job_events") == live_events
    assert await trace(db, enqueued) == (1, 1, 1) and await trace(db, processing) == (1, 1, 1)


async def test_the_repository_refuses_to_prune_a_live_state(db):
    for state in (S.ENQUEUED, S.PROCESSING, S.FAILED):
        async with db.autocommit() as conn:
            with pytest.raises(ValueError):
                await RetentionRepository().prune_batch(conn, state, 1.0, 10)


async def test_a_pruned_execution_frees_its_idempotency_key(db, h):
    first = await enqueue(db, idempotency_key="order-42")
    assert await enqueue(db, idempotency_key="order-42") == first  # the key holds while it is stored
    await sql(db, "UPDATE job_executions SET state = 'SUCCEEDED', created_at = now() - interval '9 days', "
                  "completed_at = now() - interval '8 days' WHERE id = :id", id=first)

    assert (await pruner(db).run()).total == 1

    [again] = await EnqueueService(db, EnqueueLimits(1_048_576)).enqueue(
        [NewJob(handler="h", job_id="j", idempotency_key="order-42")])
    assert again.created and again.execution.id != first


# --- batches ----------------------------------------------------------------------------------

async def test_batches_hold_at_most_1000_rows_and_the_run_loops_until_nothing_is_due(db, h):
    # One instant for all of them (as one batch enqueue): the batches' key must break the tie.
    await seed(db, S.SUCCEEDED, 2500, days_ago=8, same_instant=True)
    await seed(db, S.SUCCEEDED, 30, days_ago=1)  # not due

    report = await pruner(db).run()

    assert report.batches[:3] == [1000, 1000, 500]
    assert max(report.batches) <= 1000
    assert report.deleted == {S.SUCCEEDED: 2500}
    assert await count(db, "job_executions") == 30
    assert await count(db, "job_events") == 30


async def test_every_statement_deletes_at_most_the_batch_size(db, h):
    """Counted at the statement: the repository each batch goes through."""
    seen: list[int] = []

    class Counting(RetentionRepository):
        async def prune_batch(self, conn, state, retention, n, after=FIRST_KEY):  # type: ignore[override]
            batch = await super().prune_batch(conn, state, retention, n, after)
            seen.append(batch.deleted)
            return batch

    await seed(db, S.DEAD_LETTER, 730, days_ago=31)
    await seed(db, S.ABANDONED, 20, days_ago=31, job_type="CRON")
    service = PruneService(db, PruneConfig(retention_succeeded=WEEK, retention_failed=MONTH, batch_size=100),
                           retention=Counting())
    report = await service.run()
    assert report.deleted == {S.DEAD_LETTER: 730, S.ABANDONED: 20}
    assert seen == report.batches and max(seen) == 100 and sum(seen) == 750
    # SUCCEEDED and CANCELLED first (nothing due: one statement each), then DEAD_LETTER, ABANDONED.
    assert seen == [0, 0, 100, 100, 100, 100, 100, 100, 100, 30, 20]


def test_a_batch_is_never_larger_than_1000_rows():
    with pytest.raises(ValueError):
        PruneConfig(retention_succeeded=WEEK, retention_failed=MONTH, batch_size=1001)
    with pytest.raises(ValueError):
        PruneConfig(retention_succeeded=-1, retention_failed=MONTH)


# --- concurrency ------------------------------------------------------------------------------

async def test_racing_pruners_delete_each_row_exactly_once_and_never_fail(db, h, database_url):
    """Two pruners, each with its own pool (real concurrent sessions), on one backlog, several
    times over: their counts add up to the backlog, and nothing due is left."""
    await seed(db, S.SUCCEEDED, 3000, days_ago=8)
    await seed(db, S.CANCELLED, 1000, days_ago=31, same_instant=True)
    await seed(db, S.ENQUEUED, 100, days_ago=400)  # live: never touched
    node_a = await Database.open(DatabaseConfig(url=database_url))
    node_b = await Database.open(DatabaseConfig(url=database_url))
    try:
        runs = await asyncio.gather(*(pruner(node, batch_size=50).run() for node in (node_a, node_b, node_a, node_b)))
    finally:
        await node_a.close()
        await node_b.close()
    assert sum(r.deleted.get(S.SUCCEEDED, 0) for r in runs) == 3000
    assert sum(r.deleted.get(S.CANCELLED, 0) for r in runs) == 1000
    assert all(max(r.batches) <= 50 for r in runs)
    assert sum(1 for r in runs if r.total) >= 2  # they did share the work
    assert await count(db, "job_executions") == 100
    assert await count(db, "job_executions", state="ENQUEUED") == 100
    assert await count(db, "job_events") == 100


async def test_a_row_some_writer_holds_is_skipped_not_waited_for(db, h):
    held = await finished(db, S.DEAD_LETTER, completed_days_ago=31)
    other = await finished(db, S.DEAD_LETTER, completed_days_ago=31)
    async with db.transaction() as conn:
        await execute(conn, "SELECT id FROM job_executions WHERE id = :id FOR UPDATE", id=held)
        started = time.monotonic()
        report = await asyncio.wait_for(pruner(db).run(), 10)
        assert time.monotonic() - started < 5  # did not wait for the lock
        assert report.deleted == {S.DEAD_LETTER: 1}
    assert await exists(db, held) and not await exists(db, other)
    assert (await pruner(db).run()).deleted == {S.DEAD_LETTER: 1}  # the next run takes it
    assert not await exists(db, held)


async def test_a_dead_letter_being_retried_is_not_pruned(db, h):
    """A manual retry holds the row (the pruner skips it) and leaves it ENQUEUED (live)."""
    execution_id = await finished(db, S.DEAD_LETTER, completed_days_ago=31)
    async with db.transaction() as conn:
        assert await ExecutionRepository().retry_manually(conn, execution_id) is not None
        # Still uncommitted: the pruner skips the row (SKIP LOCKED), whatever it becomes.
        assert (await pruner(db).run()).total == 0
    assert (await pruner(db).run()).total == 0  # committed: ENQUEUED, live
    assert await exists(db, execution_id)


# --- cron fires --------------------------------------------------------------------------------

async def test_a_pruned_cron_fire_is_never_fired_again(db, h):
    """The schedule's cursor (job_schedule_fires.handled_until) is past the deleted fire's
    instant, so the scheduler does not make it again, though its unique row is gone."""
    await ScheduleService(db, ScheduleLimits(1_000_000)).put("nightly", ScheduleSpec(cron="*/1 * * * * *",
                                                                                    handler="h"))
    scheduler = SchedulingService(db, SchedulingConfig(node_id="n1", misfire_threshold=3600))
    for _ in range(100):
        if (await scheduler.tick()).fired:
            break
        await asyncio.sleep(0.05)
    [(fire_id, fire_at)] = [tuple(r) for r in await sql(db, "SELECT id, fire_at FROM job_executions")]
    # As the coordinator leaves a cron fire whose node died, long ago.
    await sql(db, "UPDATE job_executions SET state = 'ABANDONED', created_at = now() - interval '31 days', "
                  "completed_at = now() - interval '31 days' WHERE id = :id", id=fire_id)
    assert (await pruner(db).run()).deleted == {S.ABANDONED: 1}

    for _ in range(6):  # ticks over the next second or so: later instants fire, never this one
        await scheduler.tick()
        await sql(db, "UPDATE job_executions SET state = 'SUCCEEDED', completed_at = now() "
                      "WHERE state = 'ENQUEUED'")
        await asyncio.sleep(0.25)
    instants = [r[0] for r in await sql(db, "SELECT fire_at FROM job_executions WHERE job_id = 'nightly'")]
    assert fire_at not in instants
    assert instants and all(t > fire_at for t in instants)
    handled_until = await scalar(db, "SELECT handled_until FROM job_schedule_fires WHERE job_id = 'nightly'")
    assert handled_until >= fire_at


# --- the purge ---------------------------------------------------------------------------------

async def test_the_purge_deletes_a_finished_execution_with_everything_it_owns(db, h):
    for state in (S.SUCCEEDED, S.FAILED, S.CANCELLED, S.ABANDONED, S.DEAD_LETTER):
        execution_id = await finished(db, state, completed_days_ago=0)
        await PurgeService(db).delete(execution_id)
        assert not await exists(db, execution_id) and await trace(db, execution_id) == (0, 0, 0)


async def test_the_purge_waits_for_a_late_success_and_deletes_its_event_too(db, h):
    """A purge that waited for a row lock deletes the row as the writer left it; its events go in
    a later statement, whose snapshot sees the event that writer committed."""
    execution_id = await finished(db, S.DEAD_LETTER, completed_days_ago=0)
    await sql(db, "UPDATE job_executions SET error_type = 'abandoned_deadline' WHERE id = :id", id=execution_id)
    async with db.transaction() as conn:
        [done] = await ShortcutRepository().succeed_many(conn, [(execution_id, 0, {"ok": True})],
                                                          db.notify_channel)
        assert done.state == "SUCCEEDED"
        purge = asyncio.create_task(PurgeService(db).delete(execution_id))
        await asyncio.sleep(0.3)
        assert not purge.done()  # waiting for the late success's lock
    await asyncio.wait_for(purge, 10)
    assert not await exists(db, execution_id)
    assert await trace(db, execution_id) == (0, 0, 0)


# --- the plan ----------------------------------------------------------------------------------

def _nodes(plan: dict[str, Any]) -> list[dict[str, Any]]:
    found = [plan]
    for child in plan.get("Plans", []):
        found.extend(_nodes(child))
    return found


def _literal(value: Any) -> str:
    return "'" + str(value).replace("'", "''") + "'"


async def explain(db: Database, mode: str, **args: Any) -> tuple[dict[str, Any], str]:
    """The plan (JSON and text) of the prune statement prepared as the repository runs it, as its
    custom plan or as the generic plan a prepared statement may settle on after five runs."""
    statement = Q["executions_prune"]
    values = ", ".join(_literal(args[name]) for name in statement.names)
    async with db.pool.acquire() as conn:
        await conn.execute(f"PREPARE prune_explained AS {statement.sql}")
        try:
            await conn.execute(f"SET plan_cache_mode = {mode}")
            [[document]] = await conn.fetch(f"EXPLAIN (FORMAT JSON) EXECUTE prune_explained({values})")
            text = "\n".join(r[0] for r in await conn.fetch(f"EXPLAIN EXECUTE prune_explained({values})"))
        finally:
            await conn.execute("DEALLOCATE prune_explained")
            await conn.execute("RESET plan_cache_mode")
    document = json.loads(document) if isinstance(document, str) else document
    return document[0]["Plan"], text


LISTING = {"ix_job_executions_state_created"}


@pytest.mark.parametrize("mode", ["force_custom_plan", "force_generic_plan"])
async def test_the_prune_statement_walks_an_index_in_order_and_deletes_by_key(db, h, mode):
    """On a table of many rows (ANALYZEd: a tiny table always gets a sequential scan), a batch
    reads a listing index backwards (oldest first, no sort, stopping at the batch size), locks
    what it reads (SKIP LOCKED), and deletes the rows by primary key and their events by
    ix_job_events_execution: nothing scans a whole table. Pruning a state that is a small part of
    the old rows (DEAD_LETTER among SUCCEEDED) takes ix_job_executions_state_created; the generic
    plan always does (it cannot know how common a state is)."""
    await seed(db, S.SUCCEEDED, 40_000, days_ago=8)
    await seed(db, S.SUCCEEDED, 20_000, days_ago=1)
    await seed(db, S.DEAD_LETTER, 2_000, days_ago=40)
    await seed(db, S.ENQUEUED, 5_000, days_ago=0)
    await sql(db, "ANALYZE job_executions")
    await sql(db, "ANALYZE job_events")
    start = {"n": 1000, "after_created": "0001-01-01 00:00:00+00",
             "after_id": "ffffffff-ffff-ffff-ffff-ffffffffffff"}
    for state, retention, indexes in (("SUCCEEDED", WEEK, LISTING),
                                      ("DEAD_LETTER", MONTH, {"ix_job_executions_state_created"})):
        plan, text = await explain(db, mode, state=state, retention=retention, **start)
        nodes = _nodes(plan)
        scans = [n for n in nodes if "Scan" in n["Node Type"] and n.get("Relation Name")]
        executions = [(n["Node Type"], n.get("Index Name"), n.get("Scan Direction"))
                      for n in scans if n["Relation Name"] == "job_executions"]
        walk, by_key = executions
        assert walk[0] == "Index Scan" and walk[1] in indexes and walk[2] == "Backward", text
        if mode == "force_generic_plan":
            assert walk[1] == "ix_job_executions_state_created", text
        assert by_key[:2] == ("Index Scan", "pk_job_executions"), text
        events = [(n["Node Type"], n.get("Index Name")) for n in scans if n["Relation Name"] == "job_events"]
        # The delete's, then the lookup of deliver_deleted (per deleted event a subscription has not read).
        assert events[0] == ("Index Scan", "ix_job_events_execution") and len(events) <= 2, text
        assert all(kind == "Index Scan" for kind, _ in events), text
        due = next(n for n in nodes if n.get("Subplan Name") == "CTE due")
        kinds = [n["Node Type"] for n in _nodes(due) if not n.get("Subplan Name", "").startswith("InitPlan")]
        assert kinds[:2] == ["Limit", "LockRows"] and "Sort" not in kinds, text
