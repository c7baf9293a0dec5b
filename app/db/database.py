"""The unit of work the services use: one connection of the node's asyncpg pool, in a
transaction (asyncpg's own) or autocommit, with the driver's errors translated (app/db/errors.py)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import asyncpg

from app.db.connection import DatabaseConfig, create_pool
from app.db.errors import first_line, is_connection_problem, translate
from app.domain.errors import DatabaseUnavailable

Connection = asyncpg.Connection


def notify_channel(schema: str | None) -> str:
    """The LISTEN/NOTIFY channel of a schema's nodes (channels are per database, so it names the
    schema; job_meta holds it for jobwire_enqueue)."""
    return f"jobwire_{schema or 'default'}_enqueued"


class Database:
    """Owns the pool; services open units of work through it and never see the driver."""

    def __init__(self, pool: asyncpg.Pool, schema: str | None, *, acquire_timeout: float = 30.0) -> None:
        self.pool = pool
        self.schema = schema
        self.acquire_timeout = acquire_timeout
        self.notify_channel = notify_channel(schema)
        # How many times a unit of work found the database unreachable (the outage rule of
        # app.domain.outage counts from the last one).
        self.failures = 0

    @classmethod
    async def open(cls, config: DatabaseConfig) -> Database:
        return cls(await create_pool(config), config.schema, acquire_timeout=config.pool_timeout)

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[Connection]:
        async with self._connection() as conn:
            async with conn.transaction():
                yield conn

    @asynccontextmanager
    async def autocommit(self) -> AsyncIterator[Connection]:
        """A connection on which every statement commits on its own: for a write that is one
        statement, it saves the BEGIN and COMMIT round trips."""
        async with self._connection() as conn:
            yield conn

    @asynccontextmanager
    async def _connection(self) -> AsyncIterator[Connection]:
        try:
            conn = await self.pool.acquire(timeout=self.acquire_timeout)
        except Exception as exc:  # no connection at all: the database is not reachable
            self.failures += 1
            raise DatabaseUnavailable(first_line(exc)) from exc
        try:
            yield conn
        except Exception as exc:
            domain = translate(exc)
            if domain is None:
                raise
            if isinstance(domain, DatabaseUnavailable):
                self.failures += 1
                await self._discard(conn, exc)
            raise domain from exc
        finally:
            try:
                await self.pool.release(conn)
            except Exception:  # releasing a connection that died must not mask the first error
                pass

    async def _discard(self, conn: Connection, exc: BaseException) -> None:
        """This connection, and every pooled one opened before it, is replaced: a restarted server
        dropped them all, and each would otherwise fail one request before the pool learns it."""
        if is_connection_problem(exc):
            try:
                conn.terminate()
            except asyncpg.InterfaceError:  # closed already, and handed back to the pool by it
                pass
            await self.pool.expire_connections()

    async def close(self) -> None:
        await self.pool.close()
