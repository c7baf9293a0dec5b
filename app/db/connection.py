"""Reaching PostgreSQL: URLs, session settings, and the one asyncpg pool of a node."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import asyncpg
from sqlalchemy.engine import URL, make_url

from app.domain.jsontext import loads


@dataclass(frozen=True, slots=True)
class DatabaseConfig:
    url: str  # postgresql://… as the user gave it (or the embedded server's)
    schema: str | None = None
    # A fixed pool: connections opened and closed under load would spend the server's CPU on
    # connection set-up. A request that finds every connection busy waits for one
    # (pool_timeout), then counts as unavailable.
    pool_size: int = 16
    pool_timeout: float = 30.0


def async_url(url: str) -> URL:
    """`postgresql://…` (or `postgres://`) → the asyncpg driver URL SQLAlchemy needs (alembic)."""
    parsed = make_url(url)
    if parsed.drivername in ("postgresql", "postgres", "postgresql+asyncpg"):
        return parsed.set(drivername="postgresql+asyncpg")
    raise ValueError(f"unsupported database URL scheme {parsed.drivername!r}: use postgresql://")


def sqlalchemy_url(url: str) -> URL:
    """The URL for SQLAlchemy's asyncpg dialect (alembic's migrations), which hands the query to
    asyncpg.connect() as keyword arguments: libpq's `sslmode` is asyncpg's `ssl` there (asyncpg's
    own DSN, asyncpg_dsn, takes `sslmode` as it is)."""
    parsed = async_url(url)
    if "sslmode" in parsed.query:
        query = dict(parsed.query)
        query["ssl"] = query.pop("sslmode")
        parsed = parsed.set(query=query)
    return parsed


def asyncpg_dsn(url: str) -> str:
    """A DSN asyncpg accepts (a unix-socket directory comes as ?host=…)."""
    return async_url(url).set(drivername="postgresql").render_as_string(hide_password=False)


def server_settings(schema: str | None) -> dict[str, str]:
    # UTC: times inside jsonb documents (events) are rendered in the session zone.
    settings = {"application_name": "jobwire", "timezone": "UTC"}
    if schema:
        # Quoted: the name is validated as one identifier, case kept.
        settings["search_path"] = f'"{schema}"'
    return settings


def connect_args(schema: str | None) -> dict[str, Any]:
    """For SQLAlchemy's asyncpg dialect (alembic's migrations)."""
    return {"server_settings": server_settings(schema)}


def _identity(text: str) -> str:
    return text


async def _init(conn: asyncpg.Connection) -> None:
    # jsonb and json in text form: parameters are passed as JSON text (the statements CAST them),
    # results decoded with integers past 64 bits kept exactly (app/domain/jsontext.py).
    for name in ("jsonb", "json"):
        await conn.set_type_codec(name, schema="pg_catalog", format="text", encoder=_identity, decoder=loads)


async def _no_reset(conn: asyncpg.Connection) -> None:
    """Returning a connection to the pool costs no round trip: asyncpg's default runs RESET ALL,
    UNLISTEN *, CLOSE ALL and pg_advisory_unlock_all() each time. Nothing needs it here: sessions
    are never changed after connecting, locks are transaction-scoped, LISTEN has its own
    connection; an open transaction is still rolled back (asyncpg does that before calling this)."""


async def create_pool(config: DatabaseConfig) -> asyncpg.Pool:
    # Opened lazily (min_size=0), kept (no inactive lifetime): a node starting while the database
    # is away still starts; under load every connection stays open.
    return await asyncpg.create_pool(
        asyncpg_dsn(config.url), min_size=0, max_size=config.pool_size, max_inactive_connection_lifetime=0,
        init=_init, reset=_no_reset, server_settings=server_settings(config.schema),
        # Every statement names its columns (never RETURNING *): cached statements stay valid
        # when a migration adds a column.
        statement_cache_size=256,
    )
