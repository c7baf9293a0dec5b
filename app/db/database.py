"""The unit of work the services use: a transaction on one pooled connection."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from sqlalchemy.exc import DBAPIError, InterfaceError, OperationalError
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from app.domain.errors import DatabaseUnavailable

# SQLSTATEs that mean "the server is not there for us right now", not "this statement is wrong":
# connection exceptions (08…), admin/crash shutdown, cannot connect now, too many connections,
# and a database refusing connections.
_UNAVAILABLE_PREFIXES = ("08", "57P01", "57P02", "57P03", "53300", "55000")


def _sqlstate(exc: BaseException) -> str | None:
    orig = getattr(exc, "orig", None)
    for candidate in (orig, getattr(orig, "__cause__", None)):
        code = getattr(candidate, "sqlstate", None) or getattr(candidate, "pgcode", None)
        if code:
            return str(code)
    return None


def is_connection_problem(exc: BaseException) -> bool:
    if isinstance(exc, (OSError, ConnectionError, InterfaceError)):
        return True
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
            raise DatabaseUnavailable(_first_line(exc)) from exc
        try:
            if begin:
                async with conn.begin():
                    yield conn
            else:
                yield conn
        except (DBAPIError, OSError, ConnectionError) as exc:
            if is_connection_problem(exc):
                raise DatabaseUnavailable(_first_line(exc)) from exc
            raise
        finally:
            try:
                await conn.close()
            except Exception:  # closing a connection that died must not mask the first error
                pass

    async def dispose(self) -> None:
        await self.engine.dispose()


def _first_line(exc: BaseException) -> str:
    return (str(exc).splitlines() or [type(exc).__name__])[0]
