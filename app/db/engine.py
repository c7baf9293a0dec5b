"""Engine construction: URL normalisation, schema placement, pool sizing."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import text
from sqlalchemy.engine import URL, make_url
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

from app.domain.jsontext import dumps, loads


@dataclass(frozen=True, slots=True)
class DatabaseConfig:
    url: str  # postgresql://… as the user gave it (or the embedded server's)
    schema: str | None = None
    # A fixed pool: connections past pool_size ("overflow") would be closed as soon as they are
    # returned, and under load the server would spend its CPU opening new ones. A request that
    # finds every connection busy waits for one (pool_timeout), then counts as unavailable.
    pool_size: int = 16
    pool_timeout: float = 30.0


def async_url(url: str) -> URL:
    """`postgresql://…` (or `postgres://`) → the asyncpg driver URL SQLAlchemy needs."""
    parsed = make_url(url)
    if parsed.drivername in ("postgresql", "postgres", "postgresql+asyncpg"):
        return parsed.set(drivername="postgresql+asyncpg")
    raise ValueError(f"unsupported database URL scheme {parsed.drivername!r}: use postgresql://")


def asyncpg_dsn(url: str) -> str:
    """A DSN plain asyncpg.connect() accepts (for LISTEN, which needs a dedicated connection)."""
    return async_url(url).set(drivername="postgresql").render_as_string(hide_password=False)


def connect_args(schema: str | None) -> dict:
    # UTC: times inside jsonb documents (events) are rendered in the session zone.
    settings = {"application_name": "jobwire", "timezone": "UTC"}
    if schema:
        # Quoted: the name is validated as one identifier, case kept.
        settings["search_path"] = f'"{schema}"'
    # The statement cache is safe because every statement names its columns (no RETURNING *).
    return {"server_settings": settings}


def create_engine(config: DatabaseConfig) -> AsyncEngine:
    return create_async_engine(
        async_url(config.url),
        pool_size=config.pool_size,
        max_overflow=0,
        pool_timeout=config.pool_timeout,
        pool_pre_ping=False,
        pool_recycle=1800,
        # jsonb both ways, SQLAlchemy's statements and raw asyncpg ones (app/db/raw.py) alike: an
        # integer past 64 bits is read as an orjson.Fragment of its digits, and written back as them
        # (as is a Python int past 64 bits, which orjson alone refuses).
        json_serializer=lambda v: dumps(v).decode(),
        json_deserializer=loads,
        connect_args=connect_args(config.schema),
    )


async def ping(engine: AsyncEngine) -> None:
    async with engine.connect() as conn:
        await conn.execute(text("SELECT 1"))
