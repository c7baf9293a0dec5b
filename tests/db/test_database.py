"""The unit of work words a connection the server or the driver gave up on as DatabaseUnavailable."""

from __future__ import annotations

import asyncpg
import pytest
from sqlalchemy import text

from app.db.database import Database
from app.domain.errors import DatabaseUnavailable


async def backend_pid(db: Database) -> int:
    async with db.autocommit() as conn:
        return (await conn.execute(text("SELECT pg_backend_pid()"))).scalar_one()


async def test_a_driver_protocol_error_is_unavailable_and_its_connection_replaced(db: Database) -> None:
    # What asyncpg raises for a statement on a pooled connection that has just read the FATAL
    # "terminating connection" of its killed backend but not yet the socket's close
    # (its protocol is still consuming that error): a 503 to retry, not a 500.
    before = await backend_pid(db)
    with pytest.raises(DatabaseUnavailable, match="cannot switch to state 11"):
        async with db.autocommit() as conn:
            assert (await conn.execute(text("SELECT pg_backend_pid()"))).scalar_one() == before
            raise asyncpg.exceptions.InternalClientError(
                "cannot switch to state 11; another operation (2) is in progress")
    assert await backend_pid(db) != before


async def test_a_statement_error_is_not_worded_unavailable(db: Database) -> None:
    with pytest.raises(asyncpg.exceptions.DivisionByZeroError):
        async with db.autocommit() as conn:
            driver = (await conn.get_raw_connection()).driver_connection
            await driver.fetchval("SELECT 1 / 0")
