"""The listing's filters are served by indexes (EXPLAIN on seeded, analysed rows: a tiny table
always gets a sequential scan), with the plan the node gets for the statement's first runs
(custom) and the one PostgreSQL may settle on later (generic: the parameters unknown). The
partial GIN index of metadata is usable because the statement repeats its predicate, and the
listing by metadata is planned for each value (never generically)."""

from __future__ import annotations

import re
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from app.db.database import Database
from app.db.executions import ExecutionRepository
from app.db.statements import compile_named
from app.domain.executions import ListFilter

NOW = datetime(2026, 12, 1, tzinfo=UTC)


class Explaining:
    """A connection for ExecutionRepository.list that EXPLAINs its query instead of running it."""

    def __init__(self, conn: Any, generic: bool) -> None:
        self.conn, self.generic, self.plan = conn, generic, ""

    async def execute(self, sql: str, *args: Any) -> str:
        return await self.conn.execute(sql, *args)  # the statements before it (a SET LOCAL)

    async def fetch(self, sql: str, *args: Any) -> list[Any]:
        if self.generic:
            await self.conn.execute("SET LOCAL plan_cache_mode = force_generic_plan")
            await self.conn.execute(f"PREPARE listing AS {sql}")
            values = ", ".join(literal(a) for a in args)  # EXECUTE takes no parameters of its own
            rows = await self.conn.fetch(f"EXPLAIN EXECUTE listing({values})")
            await self.conn.execute("DEALLOCATE listing")
        else:
            rows = await self.conn.fetch(f"EXPLAIN {sql}", *args)
        self.plan = "\n".join(r[0] for r in rows)
        return []


def literal(value: Any) -> str:
    if isinstance(value, int):
        return str(value)
    if isinstance(value, list):  # the states walked: plain words, an array literal
        return "'{" + ",".join(value) + "}'"
    text = value.isoformat() if isinstance(value, datetime) else str(value)
    return "'" + text.replace("'", "''") + "'"


async def plan_of(db: Database, filters: ListFilter, generic: bool,
                  after: tuple[datetime, uuid.UUID] | None = None) -> str:
    async with db.transaction() as conn:
        explaining = Explaining(conn, generic)
        await ExecutionRepository().list(explaining, filters, 51, after)  # type: ignore[arg-type]
    return explaining.plan


@pytest.fixture
async def seeded(db: Database) -> None:
    """40,000 executions over 40 days: 70% without metadata, 10% with `{}`, 20% with a customer of
    1,000 and a plan (`pro` or `free`, half each); 10% with a concurrency key of 500; 30% with an
    idempotency key."""
    async with db.transaction() as conn:
        await conn.execute("""
            INSERT INTO job_executions (job_id, job_type, handler, queue, state, metadata, idempotency_key,
                                        concurrency_key, created_at)
            SELECT 'job-' || (g % 500), 'DELAYED', 'h' || (g % 10), 'q' || (g % 5),
                   CASE WHEN g % 50 = 0 THEN 'DEAD_LETTER' ELSE 'SUCCEEDED' END,
                   CASE WHEN g % 10 < 7 THEN NULL WHEN g % 10 = 7 THEN '{}'::jsonb
                        ELSE jsonb_build_object('customer', 'c' || (g % 1000), 'tier', g % 3,
                                                'plan', CASE WHEN g % 20 < 10 THEN 'pro' ELSE 'free' END) END,
                   CASE WHEN g % 10 < 3 THEN 'idem-' || g END,
                   CASE WHEN g % 10 = 5 THEN 'k' || (g % 500) END,
                   TIMESTAMPTZ '2026-12-01 00:00:00Z' - make_interval(secs => g * 86)
            FROM generate_series(1, 40000) AS g
        """)
        await conn.execute("ANALYZE job_executions")


def index_used(plan: str) -> set[str]:
    return set(re.findall(r"(?:Index Scan using|Index Only Scan using|Bitmap Index Scan on) (\w+)", plan))


FILTERS = {
    "none": (ListFilter(), "ix_job_executions_state_created"),  # a walk per state, merged
    "metadata": (ListFilter(metadata=("customer", "c48")), "ix_job_executions_metadata"),
    "concurrency_key": (ListFilter(concurrency_key="k5"), "ix_job_executions_concurrency_key"),
    "idempotency_key": (ListFilter(idempotency_key="idem-12340"), "uq_job_executions_idempotency_key"),
    "job_id": (ListFilter(job_id="job-42"), "ix_job_executions_job_id_given"),
    "window": (ListFilter(created_after=NOW - timedelta(days=20, hours=1), created_before=NOW - timedelta(days=20)),
               "ix_job_executions_state_created"),
    "state and window": (ListFilter(state="DEAD_LETTER", created_after=NOW - timedelta(days=20, hours=6),
                                    created_before=NOW - timedelta(days=20)), "ix_job_executions_state_created"),
}


@pytest.mark.usefixtures("seeded")
@pytest.mark.parametrize(("name", "generic"), [
    (name, generic) for name in FILTERS for generic in (False, True)
    if not (name == "metadata" and generic)  # planned for its value, never generically (the last test)
])
async def test_each_filter_of_the_listing_uses_its_index(db: Database, name: str, generic: bool) -> None:
    filters, index = FILTERS[name]
    plan = await plan_of(db, filters, generic)
    assert index in index_used(plan), plan
    assert "Seq Scan" not in plan, plan


@pytest.mark.usefixtures("seeded")
@pytest.mark.parametrize("generic", [False, True], ids=["custom", "generic"])
async def test_a_job_id_that_is_an_execution_id_is_looked_up_by_the_primary_key_and_the_job_id_index(
        db: Database, generic: bool) -> None:
    """A one-off job's own id is its job_id, which ix_job_executions_job_id_given leaves out: the
    listing reads that execution by the primary key, and the executions given that job_id by the
    partial index."""
    plan = await plan_of(db, ListFilter(job_id=str(uuid.uuid4())), generic)
    assert {"pk_job_executions", "ix_job_executions_job_id_given"} <= index_used(plan), plan
    assert "Seq Scan" not in plan, plan


@pytest.mark.usefixtures("seeded")
@pytest.mark.parametrize("generic", [False, True], ids=["custom", "generic"])
async def test_a_later_page_starts_at_its_cursor_through_an_index_condition(db: Database, generic: bool) -> None:
    after = (NOW - timedelta(days=30), uuid.UUID(int=0))
    for filters in (ListFilter(), ListFilter(concurrency_key="k5")):
        plan = await plan_of(db, filters, generic, after)
        assert re.search(r"Index Cond: .*created_at <=", plan), plan


def test_the_listing_statement_compiles() -> None:
    """The metadata predicate's `'{}'` literal is text to the compiler, not a parameter."""
    sql, names = compile_named("SELECT 1 WHERE metadata @> CAST(:metadata AS jsonb) AND metadata <> '{}'")
    assert names == ("metadata",) and "'{}'" in sql


@pytest.mark.usefixtures("seeded")
async def test_a_metadata_listing_is_planned_for_its_value_after_many_runs_of_another(db: Database) -> None:
    """The node's connections keep prepared statements, and PostgreSQL may give one a generic plan
    after five runs: a plan made for a common value (walk the newest first, filtering) would then
    serve a rare one by reading the whole table. The listing by metadata is planned for each value."""
    repo = ExecutionRepository()
    notices: list[str] = []

    def listen(_conn: object, message: Any) -> None:
        notices.append(message.message)

    async with db.pool.acquire() as conn:
        conn.add_log_listener(listen)
        try:
            for _ in range(12):
                async with conn.transaction():
                    await repo.list(conn, ListFilter(metadata=("plan", "pro")), 51)
            async with conn.transaction():
                for setting in ("LOAD 'auto_explain'", "SET LOCAL auto_explain.log_min_duration = 0",
                                "SET LOCAL auto_explain.log_level = 'notice'"):
                    await conn.execute(setting)
                found = await repo.list(conn, ListFilter(metadata=("customer", "c48")), 51)
        finally:
            conn.remove_log_listener(listen)
    assert len(found) == 40 and all(e.metadata["customer"] == "c48" for e in found)
    [plan] = [n for n in notices if "metadata @>" in n]
    assert "ix_job_executions_metadata" in index_used(plan), plan
