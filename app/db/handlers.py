"""HandlerRepository (job_handlers) and MetaRepository (job_meta)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy import bindparam
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.ext.asyncio import AsyncConnection
from sqlalchemy.types import Text

from app.db.queries import load
from app.db.rows import to_handler
from app.domain.executions import Handler

Q = load("handlers.sql")


@dataclass(frozen=True, slots=True)
class HandlerUsage:
    has_executions: bool
    has_schedules: bool


class HandlerRepository:
    async def upsert(
        self,
        conn: AsyncConnection,
        *,
        name: str,
        url: str,
        timeout_seconds: float | None,
        max_concurrency: int | None,
        stateful: bool,
        new_secret: str,
    ) -> tuple[Handler, bool]:
        """Insert or replace; returns the handler and whether it was created."""
        row = (
            await conn.execute(
                Q["handler_upsert"],
                {
                    "name": name,
                    "url": url,
                    "timeout_seconds": timeout_seconds,
                    "max_concurrency": max_concurrency,
                    "stateful": stateful,
                    "secret": new_secret,
                },
            )
        ).one()
        return to_handler(row), bool(row._mapping["created"])

    async def get(self, conn: AsyncConnection, name: str) -> Handler | None:
        row = (await conn.execute(Q["handler_get"], {"name": name})).first()
        return to_handler(row) if row else None

    async def list(self, conn: AsyncConnection) -> list[Handler]:
        return [to_handler(r) for r in await conn.execute(Q["handlers_list"])]

    async def lock_for_enqueue(self, conn: AsyncConnection, names: Sequence[str]) -> dict[str, bool]:
        """Share-lock the named handlers until commit; returns name → stateful for those that exist."""
        stmt = Q["handlers_lock_for_enqueue"].bindparams(bindparam("names", type_=ARRAY(Text)))
        rows = await conn.execute(stmt, {"names": list(names)})
        return {r._mapping["name"]: r._mapping["stateful"] for r in rows}

    async def lock_for_delete(self, conn: AsyncConnection, name: str) -> bool:
        return (await conn.execute(Q["handler_lock_for_delete"], {"name": name})).first() is not None

    async def usage(self, conn: AsyncConnection, name: str) -> HandlerUsage:
        m = (await conn.execute(Q["handler_usage"], {"name": name})).one()._mapping
        return HandlerUsage(has_executions=m["has_executions"], has_schedules=m["has_schedules"])

    async def delete(self, conn: AsyncConnection, name: str) -> None:
        await conn.execute(Q["handler_delete"], {"name": name})


class MetaRepository:
    async def get_or_create(self, conn: AsyncConnection, key: str, candidate: str) -> str:
        """The stored value of key, storing candidate first if none exists (first writer wins)."""
        await conn.execute(Q["meta_insert_if_missing"], {"key": key, "value": candidate})
        return (await conn.execute(Q["meta_get"], {"key": key})).scalar_one()
