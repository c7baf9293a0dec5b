"""The unit of work the services use: a transaction on one pooled connection."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import asyncpg
from sqlalchemy.exc import DBAPIError, InterfaceError, OperationalError
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from app.domain.errors import DatabaseContention, DatabaseUnavailable

# SQLSTATEs that mean "the server is not there for us right now", not "this statement is wrong":
# connection exceptions (08…), admin/crash shutdown, cannot connect now, too many connections,
# and a database refusing connections.
_UNAVAILABLE_PREFIXES = ("08", "57P01", "57P02", "57P03", "53300", "55000")
# SQLSTATEs that mean "another transaction won this time": serialization failure, deadlock. The
# transaction changed nothing; run again, it may well succeed.
_CONTENTION = ("40001", "40P01")


def _sqlstate(exc: BaseException) -> str | None:
    orig = getattr(exc, "orig", None)
    for candidate in (orig, getattr(orig, "__cause__", None)):
        code = getattr(candidate, "sqlstate", None) or getattr(candidate, "pgcode", None)
        if code:
            return str(code)
    return None


# The driver's own connection-level failures. InternalClientError is its protocol refusing a
# statement while it is still taking in something the server sent unasked: the FATAL
# "terminating connection" of a backend killed while the connection sat in the pool, read just
# before the socket closes. No statement was sent; the connection is finished either way.
_DRIVER_CONNECTION_ERRORS = (asyncpg.InterfaceError, asyncpg.exceptions.InternalClientError)


def is_contention(exc: BaseException) -> bool:
    if isinstance(exc, asyncpg.PostgresError):
        return exc.sqlstate in _CONTENTION
    return isinstance(exc, DBAPIError) and _sqlstate(exc) in _CONTENTION


def is_connection_problem(exc: BaseException) -> bool:
    if isinstance(exc, (OSError, ConnectionError, InterfaceError, *_DRIVER_CONNECTION_ERRORS)):
        return True
    if isinstance(exc, asyncpg.PostgresError):  # from a statement run on the driver itself
        return str(exc.sqlstate or "").startswith(_UNAVAILABLE_PREFIXES)
    if isinstance(exc, DBAPIError):
        if exc.connection_invalidated or isinstance(exc, OperationalError):
            return True
        state = _sqlstate(exc)
        return bool(state and state.startswith(_UNAVAILABLE_PREFIXES))
    return False


class Database:
    """Owns the engine; services open transactions through it and never see SQLAlchemy."""

    def __init__(self, engine: AsyncEngine, schema: str | None) -> None:
        self.engine = engine
        self.schema = schema
        self.notify_channel = f"jobwire_{schema or 'default'}_enqueued"
        self._autocommit: AsyncEngine | None = None
        # How many times a unit of work found the database unreachable (the outage rule of
        # app.domain.outage counts from the last one).
        self.failures = 0

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[AsyncConnection]:
        async with self._connection(self.engine, begin=True) as conn:
            yield conn

    @asynccontextmanager
    async def autocommit(self) -> AsyncIterator[AsyncConnection]:
        """A connection on which every statement commits on its own: for a write that is one
        statement, it saves the BEGIN and COMMIT round trips."""
        if self._autocommit is None:  # the same pool, connections handed out in autocommit mode
            self._autocommit = self.engine.execution_options(isolation_level="AUTOCOMMIT")
        async with self._connection(self._autocommit, begin=False) as conn:
            yield conn

    @asynccontextmanager
    async def _connection(self, engine: AsyncEngine, begin: bool) -> AsyncIterator[AsyncConnection]:
        try:
            conn = await engine.connect()
        except Exception as exc:  # no connection at all: the database is not reachable
            self.failures += 1
            raise DatabaseUnavailable(_first_line(exc)) from exc
        try:
            if begin:
                async with conn.begin():
                    yield conn
            else:
                yield conn
        except (DBAPIError, OSError, ConnectionError, asyncpg.PostgresError, *_DRIVER_CONNECTION_ERRORS) as exc:
            if is_connection_problem(exc):
                if not isinstance(exc, DBAPIError):  # the driver's own: SQLAlchemy does not know
                    await _invalidate(conn, exc)
                self.failures += 1
                raise DatabaseUnavailable(_first_line(exc)) from exc
            if is_contention(exc):
                raise DatabaseContention(_first_line(exc)) from exc
            raise
        finally:
            try:
                await conn.close()
            except Exception:  # closing a connection that died must not mask the first error
                pass

    async def dispose(self) -> None:
        await self.engine.dispose()


async def _invalidate(conn: AsyncConnection, exc: BaseException) -> None:
    """What SQLAlchemy does on a disconnect it sees itself (Connection._handle_dbapi_exception):
    this connection, and every pooled one opened before it, is replaced; a restarted server
    dropped them all, and each would otherwise fail one request before the pool learns it."""
    try:
        fairy = await conn.get_raw_connection()
        conn.sync_engine.pool._invalidate(fairy, exc)
    except Exception:  # already gone: nothing more to do
        pass


def _first_line(exc: BaseException) -> str:
    return (str(exc).splitlines() or [type(exc).__name__])[0]
