"""A statement on its own, straight through asyncpg: for the few that every job runs.

SQLAlchemy's execution layer (compiling the cached statement, the cursor adapter, the greenlet
hop, result processing) costs a few hundred microseconds per statement, more on a machine that
was idle: the enqueue and the claim through it cost the idle latency (enqueue → handler)
about a millisecond (`python -m bench --only idle_latency`, alternating: p50 6.6 / 6.8 /
7.3 ms through SQLAlchemy, 5.8 / 6.2 / 5.8 ms straight through asyncpg).

A RawStatement is a named statement compiled once for asyncpg; `fetch` runs it on the pooled
connection's driver connection when that connection has no transaction open (an autocommit
connection: the statement is its own transaction), and through SQLAlchemy otherwise, so it
never steps outside a transaction a caller began. Rows come back as mappings either way
(asyncpg's Record, SQLAlchemy's RowMapping), decoded by the same jsonb codec.

Errors from the driver come as asyncpg's own exceptions; Database._connection words the
connection-level ones as DatabaseUnavailable, as it does SQLAlchemy's.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy.dialects.postgresql import asyncpg as asyncpg_dialect
from sqlalchemy.ext.asyncio import AsyncConnection
from sqlalchemy.sql.elements import TextClause

_DIALECT = asyncpg_dialect.dialect()


class RawStatement:
    def __init__(self, clause: TextClause) -> None:
        compiled = clause.compile(dialect=_DIALECT)
        self.clause = clause
        self.sql = str(compiled)  # $1, $2, … in the order of `names`
        self.names: tuple[str, ...] = tuple(compiled.positiontup or ())


async def fetch(conn: AsyncConnection, statement: RawStatement, params: dict[str, Any]) -> Sequence[Mapping[str, Any]]:
    if conn.in_transaction():
        return [row._mapping for row in await conn.execute(statement.clause, params)]
    driver = (await conn.get_raw_connection()).driver_connection
    assert driver is not None
    return await driver.fetch(statement.sql, *[params[name] for name in statement.names])
