"""A row inserted for an execution that is gone is the database's NotFound (app/db/errors.py): the
foreign keys that reference job_executions are known by the names the migrated database gives
them, and the translation takes an insert's violation only."""

from __future__ import annotations

import uuid

import asyncpg
import pytest

from app.db.database import Database
from app.db.errors import EXECUTION_REFERENCES, translate
from app.domain.errors import NotFound
from tests.conftest import sql


async def test_every_foreign_key_to_an_execution_in_the_database_is_one_the_translation_knows(db: Database) -> None:
    rows = await sql(db, "SELECT conname FROM pg_constraint WHERE contype = 'f' "
                         "AND confrelid = CAST('job_executions' AS regclass)")
    assert {r[0] for r in rows} == EXECUTION_REFERENCES
    assert EXECUTION_REFERENCES >= {"fk_job_logs_execution_id_job_executions",
                                    "fk_job_steps_execution_id_job_executions"}


@pytest.mark.parametrize("table", ["job_logs", "job_steps"])
async def test_an_insert_for_an_execution_that_is_gone_is_not_found(db: Database, table: str) -> None:
    gone = uuid.uuid4()
    statement = {"job_logs": "INSERT INTO job_logs (execution_id, attempt, level, message) VALUES ($1, 0, 'INFO', 'x')",
                 "job_steps": "INSERT INTO job_steps (execution_id, name) VALUES ($1, 's')"}[table]
    with pytest.raises(NotFound) as refused:
        async with db.transaction() as conn:
            await conn.execute(statement, gone)
    assert refused.value.kind == "execution" and refused.value.key == str(gone)
    assert isinstance(refused.value.__cause__, asyncpg.ForeignKeyViolationError)


def violation(constraint: str, detail: str) -> asyncpg.ForeignKeyViolationError:
    exc = asyncpg.ForeignKeyViolationError("violates foreign key constraint")
    exc.constraint_name, exc.detail = constraint, detail  # type: ignore[attr-defined]
    return exc


def test_only_an_inserts_violation_of_an_execution_reference_is_not_found() -> None:
    known = "fk_job_steps_execution_id_job_executions"
    missing = violation(known, 'Key (execution_id)=(0190e0a1-0000-7000-8000-000000000000) is not present in table '
                               '"job_executions".')
    assert isinstance(translate(missing), NotFound)
    unreadable = violation(known, 'Key is not present in table "job_executions".')  # a role without SELECT
    assert isinstance(translate(unreadable), NotFound)
    # A delete of a row still referenced (no such key cascades today), another table's key: bugs.
    assert translate(violation(known, 'Key (id)=(x) is still referenced from table "job_steps".')) is None
    assert translate(violation("fk_job_handler_secrets_handler_job_handlers",
                               'Key (handler)=(h) is not present in table "job_handlers".')) is None
