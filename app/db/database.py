"""The unit of work the services use: a transaction on one pooled connection."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from sqlalchemy.exc import DBAPIError, InterfaceError, OperationalError
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from app.domain.errors import DatabaseUnavailable


def _is_connection_problem(exc: BaseException) -> bool:
    if isinstance(exc, (OperationalError, InterfaceError)):
        return True
    if isinstance(exc, DBAPIError) and exc.connection_invalidated:
        return True
    return isinstance(exc, (OSError, ConnectionError))


class Database:
    """Owns the engine; services open transactions through it and never see SQLAlchemy."""

    def __init__(self, engine: AsyncEngine, schema: str | None) -> None:
        self.engine = engine
        self.schema = schema
        self.notify_channel = f"jobwire_{schema or 'default'}_enqueued"

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[AsyncConnection]:
        try:
            async with self.engine.begin() as conn:
                yield conn
        except (DBAPIError, OSError, ConnectionError) as exc:
            if _is_connection_problem(exc):
                raise DatabaseUnavailable(str(exc).splitlines()[0]) from exc
            raise

    async def dispose(self) -> None:
        await self.engine.dispose()
