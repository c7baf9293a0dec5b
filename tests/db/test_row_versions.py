"""What a transition costs in row versions and index entries (pg_stat_xact_user_tables counts
the transaction's own updates, and how many were HOT: a new version beside the old one in its
page, with no index entry).

A 202 hands an execution to its handler: the release clears locked_by, which no index holds
(revision 20261204_0025), so it is a HOT update whenever the row's page has room; the table keeps
15 % of each page for that (fillfactor 85). A claim, which changes the state, writes a version
with its index entries."""

from __future__ import annotations

from app.db.database import Connection, Database
from app.db.executions import ExecutionRepository
from app.db.handlers import HandlerRepository
from app.domain.signing import new_handler_secret

repo = ExecutionRepository()


async def updates(conn: Connection) -> tuple[int, int]:
    """Updates of job_executions counted on this connection and not yet flushed to the shared
    statistics (this transaction's, and maybe earlier ones'), and how many of them were HOT."""
    row = await conn.fetchrow("SELECT n_tup_upd, n_tup_hot_upd FROM pg_stat_xact_user_tables"
                              " WHERE relname = 'job_executions'")
    return (row["n_tup_upd"], row["n_tup_hot_upd"]) if row else (0, 0)


def since(before: tuple[int, int], after: tuple[int, int]) -> tuple[int, int]:
    return after[0] - before[0], after[1] - before[1]


async def test_a_202_release_is_a_hot_update_and_a_claim_is_not(db: Database) -> None:
    async with db.transaction() as conn:
        await HandlerRepository().upsert(conn, name="h", url="http://127.0.0.1:9/h", timeout_seconds=None,
                                         max_concurrency=None, stateful=False, new_secret=new_handler_secret())
        await conn.execute("INSERT INTO job_executions (job_id, job_type, handler, queue, state)"
                           " SELECT 'j' || g, 'DELAYED', 'h', 'default', 'ENQUEUED' FROM generate_series(1, 3) AS g")
    async with db.transaction() as conn:
        before = await updates(conn)
        claimed = await repo.claim(conn, "node-1", 3, [], 30.0)
        assert since(before, await updates(conn)) == (3, 0)  # the state changed: index entries each
    async with db.transaction() as conn:
        before = await updates(conn)
        released = await repo.release_to_handler(conn, "node-1", [(job.id, job.attempt) for job in claimed])
        assert sorted(released) == sorted(job.id for job in claimed)
        assert since(before, await updates(conn)) == (3, 3)
    assert await db.pool.fetchval("SELECT reloptions FROM pg_class WHERE oid = 'job_executions'::regclass") == [
        "fillfactor=85"]
