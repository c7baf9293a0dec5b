"""One shape per resource: the execution's column list derives from tables.py and is the domain's
Execution; every SQL function's named result columns agree with the table columns of the same
name, in name and type, beyond the computed columns each one declares here."""

from __future__ import annotations

import dataclasses

import asyncpg
from sqlalchemy.engine import make_url

from app.db.queries import EXECUTION_BOOKKEEPING, EXECUTION_COLUMNS, SCHEDULE_COLUMNS
from app.db.tables import job_executions, job_schedules
from app.domain.executions import Execution
from app.domain.schedules import Schedule

# Result columns that are no column of job_executions, per function: what each computes.
COMPUTED = {
    "jobwire_enqueue": {"ord", "created"},  # the item's position; inserted or found by its key
    # deadline - now(); the handler's URL, its newest signing secret and every active one
    # and the dispatch's `workflow` (its ref and parents) and `continuation` (jobwire_resume_context);
    # its handler's `batch` (job_handlers.batch)
    "jobwire_claim": {"seconds_left", "handler_url", "handler_secret", "handler_secrets", "flow_watch", "workflow",
                      "continuation", "handler_batch"},
    "jobwire_enqueue_input": {"ord", "run_at", "delay_seconds"},  # the item as sent, before scheduled_at
}


def test_the_execution_is_every_column_of_job_executions_but_the_bookkeeping() -> None:
    table = [c.name for c in job_executions.columns]
    assert set(EXECUTION_COLUMNS) == set(table) - EXECUTION_BOOKKEEPING
    assert EXECUTION_BOOKKEEPING <= set(table)
    assert {f.name for f in dataclasses.fields(Execution)} == set(EXECUTION_COLUMNS)


def test_a_schedule_is_every_column_of_job_schedules() -> None:
    assert SCHEDULE_COLUMNS == tuple(c.name for c in job_schedules.columns)
    spec_fields = {f.name for f in dataclasses.fields(Schedule)} - {"spec"}
    assert spec_fields <= set(SCHEDULE_COLUMNS)


RESULT_COLUMNS = """
SELECT p.proname, a.name, format_type(a.type, NULL) AS type
FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace,
     unnest(p.proallargtypes, p.proargmodes, p.proargnames) AS a(type, mode, name)
WHERE n.nspname = current_schema() AND p.proname LIKE 'jobwire%' AND a.mode = 't'
"""
TABLE_COLUMNS = """
SELECT column_name, format_type(atttypid, NULL) AS type
FROM information_schema.columns c
JOIN pg_attribute a ON a.attrelid = 'job_executions'::regclass AND a.attname = c.column_name
WHERE c.table_schema = current_schema() AND c.table_name = 'job_executions'
"""


async def test_every_function_result_column_is_the_table_column_of_its_name_or_declared_computed(
        database_url: str) -> None:
    conn = await asyncpg.connect(make_url(database_url).set(drivername="postgresql").render_as_string(False))
    try:
        table = {r["column_name"]: r["type"] for r in await conn.fetch(TABLE_COLUMNS)}
        results: dict[str, dict[str, str]] = {}
        for r in await conn.fetch(RESULT_COLUMNS):
            results.setdefault(r["proname"], {})[r["name"]] = r["type"]
    finally:
        await conn.close()
    assert set(results) == set(COMPUTED), "a function returning a table needs its computed columns declared here"
    for function, columns in results.items():
        computed = COMPUTED[function]
        assert computed <= set(columns), f"{function} no longer returns {computed - set(columns)}"
        for name, type_ in columns.items():
            if name in computed:
                assert name not in table, f"{function}.{name} is a table column: compare it, don't declare it"
                continue
            assert name in table, f"{function} returns {name}, no column of job_executions (computed? say so)"
            assert type_ == table[name], f"{function}.{name} is {type_}, the table's {name} is {table[name]}"
