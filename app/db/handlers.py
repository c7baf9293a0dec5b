"""HandlerRepository (job_handlers) and MetaRepository (job_meta)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from app.db.database import Connection
from app.db.queries import load
from app.db.rows import handler_from
from app.db.signing_secrets import HANDLER_SECRETS
from app.db.statements import execute, fetch, fetchrow, fetchval, json_param
from app.domain.handlers import Batch, Handler, RateLimit

Q = load("handlers.sql")



@dataclass(frozen=True, slots=True)
class HandlerUsage:
    has_executions: bool
    has_schedules: bool


@dataclass(frozen=True, slots=True)
class HandlerGauges:
    handler: str
    circuit_state: str
    circuit_failures: int
    adaptive_limit: int | None


class HandlerRepository:
    secrets = HANDLER_SECRETS  # its signing secrets

    async def upsert(
        self,
        conn: Connection,
        *,
        name: str,
        url: str,
        timeout_seconds: float | None,
        max_concurrency: int | None,
        stateful: bool,
        new_secret: str,
        key_concurrency: int | None = None,
        rate_limit: RateLimit | None = None,
        key_rate_limit: RateLimit | None = None,
        adaptive: bool = False,
        batch: Batch | None = None,
    ) -> tuple[Handler, bool]:
        """Insert or replace; returns the handler and whether it was created. new_secret (as
        stored) becomes a created handler's first signing secret."""
        row = await fetchrow(conn, Q["handler_upsert"], name=name, url=url, timeout_seconds=timeout_seconds,
                             max_concurrency=max_concurrency, stateful=stateful, secret=new_secret,
                             key_concurrency=key_concurrency,
                             rate_limit=json_param(rate_limit and rate_limit.document()),
                             key_rate_limit=json_param(key_rate_limit and key_rate_limit.document()), adaptive=adaptive,
                             batch=json_param(batch and batch.document()))
        assert row is not None
        secrets = await self.secrets.of(conn, [name])
        return handler_from(row, secrets.get(name, ())), bool(row["created"])

    async def get(self, conn: Connection, name: str) -> Handler | None:
        row = await fetchrow(conn, Q["handler_get"], name=name)
        if row is None:
            return None
        secrets = await self.secrets.of(conn, [name])
        return handler_from(row, secrets.get(name, ()))

    async def list(self, conn: Connection) -> list[Handler]:
        rows = await fetch(conn, Q["handlers_list"])
        secrets = await self.secrets.of(conn, [r["name"] for r in rows]) if rows else {}
        return [handler_from(r, secrets.get(r["name"], ())) for r in rows]

    async def flow_gauges(self, conn: Connection) -> list[HandlerGauges]:
        return [HandlerGauges(handler=r["name"], circuit_state=r["circuit_state"], circuit_failures=r["failures"],
                              adaptive_limit=r["adaptive_limit"])
                for r in await fetch(conn, Q["handlers_flow_gauges"])]

    async def clear_legacy_secrets(self, conn: Connection) -> int:
        """Empty the deprecated job_handlers.secret column; how many rows held a copy."""
        return await execute(conn, Q["handlers_clear_legacy_secret"])

    async def lock_for_enqueue(self, conn: Connection, names: Sequence[str]) -> dict[str, bool]:
        """Share-lock the named handlers until commit; returns name → stateful for those that exist."""
        rows = await fetch(conn, Q["handlers_lock_for_enqueue"], names=list(names))
        return {r["name"]: r["stateful"] for r in rows}

    async def lock_for_delete(self, conn: Connection, name: str) -> bool:
        return await fetchrow(conn, Q["handler_lock_for_delete"], name=name) is not None

    async def usage(self, conn: Connection, name: str) -> HandlerUsage:
        m = await fetchrow(conn, Q["handler_usage"], name=name)
        assert m is not None
        return HandlerUsage(has_executions=m["has_executions"], has_schedules=m["has_schedules"])

    async def delete(self, conn: Connection, name: str) -> None:
        await execute(conn, Q["handler_delete"], name=name)


class MetaRepository:
    async def get_or_create(self, conn: Connection, key: str, candidate: str) -> str:
        """The stored value of key, storing candidate first if none exists (first writer wins)."""
        await execute(conn, Q["meta_insert_if_missing"], key=key, value=candidate)
        return await fetchval(conn, Q["meta_get"], key=key)

    async def get(self, conn: Connection, key: str) -> str | None:
        return await fetchval(conn, Q["meta_get"], key=key)

    async def replace(self, conn: Connection, key: str, stored: str, value: str) -> bool:
        """Store value in place of stored, if the key still holds stored; whether it did."""
        return await fetchrow(conn, Q["meta_replace"], key=key, stored=stored, value=value) is not None

    async def migration_heads(self, conn: Connection) -> set[str]:
        """The revisions the database's alembic_version table holds (in the session's schema)."""
        return {r["version_num"] for r in await fetch(conn, Q["migration_heads"])}
