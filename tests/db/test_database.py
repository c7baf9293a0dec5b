"""The unit of work words a connection the server or the driver gave up on as DatabaseUnavailable."""

from __future__ import annotations

import asyncio

import asyncpg
import pytest

from app.db.database import Database
from app.db.statements import fetchval
from app.domain.errors import DatabaseUnavailable


async def backend_alive(db: Database, pid: int) -> bool:
    async with db.autocommit() as conn:
        return bool(await fetchval(conn, "SELECT count(*) FROM pg_stat_activity WHERE pid = :pid", pid=pid))


async def test_a_driver_protocol_error_is_unavailable_and_its_connection_replaced(db: Database) -> None:
    # What asyncpg raises for a statement on a pooled connection that has just read the FATAL
    # "terminating connection" of its killed backend but not yet the socket's close
    # (its protocol is still consuming that error): a 503 to retry, not a 500.
    with pytest.raises(DatabaseUnavailable, match="cannot switch to state 11"):
        async with db.autocommit() as conn:
            pid = await fetchval(conn, "SELECT pg_backend_pid()")
            raise asyncpg.exceptions.InternalClientError(
                "cannot switch to state 11; another operation (2) is in progress")
    for _ in range(100):  # closed by the pool, not handed out again: its backend exits
        if not await backend_alive(db, pid):
            break
        await asyncio.sleep(0.05)
    assert not await backend_alive(db, pid)


async def test_a_statement_error_is_not_worded_unavailable(db: Database) -> None:
    with pytest.raises(asyncpg.exceptions.DivisionByZeroError):
        async with db.autocommit() as conn:
            await fetchval(conn, "SELECT 1 / 0")
