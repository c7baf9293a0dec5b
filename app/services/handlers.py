"""Handler registration: upsert (secret minted once), show, list, delete when unused."""

from __future__ import annotations

from dataclasses import dataclass

from app.db.database import Database
from app.db.handlers import HandlerRepository
from app.domain.errors import Conflict, NotFound
from app.domain.executions import Handler
from app.domain.signing import new_handler_secret


@dataclass(frozen=True, slots=True)
class HandlerSpec:
    url: str
    timeout_seconds: float | None = None
    max_concurrency: int | None = None
    stateful: bool = False


class HandlerService:
    def __init__(self, db: Database, handlers: HandlerRepository | None = None) -> None:
        self.db = db
        self.handlers = handlers or HandlerRepository()

    async def put(self, name: str, spec: HandlerSpec) -> tuple[Handler, bool]:
        async with self.db.transaction() as conn:
            return await self.handlers.upsert(
                conn,
                name=name,
                url=spec.url,
                timeout_seconds=spec.timeout_seconds,
                max_concurrency=spec.max_concurrency,
                stateful=spec.stateful,
                new_secret=new_handler_secret(),
            )

    async def get(self, name: str) -> Handler:
        async with self.db.transaction() as conn:
            handler = await self.handlers.get(conn, name)
        if handler is None:
            raise NotFound("handler", name)
        return handler

    async def list(self) -> list[Handler]:
        async with self.db.transaction() as conn:
            return await self.handlers.list(conn)

    async def delete(self, name: str) -> None:
        async with self.db.transaction() as conn:
            # Lock first, then look: the usage check's snapshot then sees every enqueue that
            # held the handler before us.
            if not await self.handlers.lock_for_delete(conn, name):
                raise NotFound("handler", name)
            usage = await self.handlers.usage(conn, name)
            if usage.has_executions:
                raise Conflict(f"handler {name!r} has ENQUEUED or PROCESSING executions")
            if usage.has_schedules:
                raise Conflict(f"handler {name!r} is used by schedules")
            await self.handlers.delete(conn, name)
