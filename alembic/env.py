"""Alembic environment: async engine, one advisory lock, schema placement, the baseline.

Run through app.db.migrate (never with a global alembic.ini): it passes the URL, the
schema and whether an upgrade to head may take the baseline in config.attributes. Alembic's
async env runs its own event loop, so the caller runs it in a worker thread, out of the
running loop's way.
"""

from __future__ import annotations

import asyncio

from alembic import context
from sqlalchemy import pool, text
from sqlalchemy.engine import Connection
from sqlalchemy.ext.asyncio import create_async_engine

from app.db import baseline
from app.db.tables import metadata

# Every node starting at once serialises here: schema creation and upgrades run under it.
MIGRATION_LOCK_KEY = 0x6A6F6277_6D696772  # "jobwmigr"

config = context.config
url: str = config.attributes["url"]
schema: str | None = config.attributes.get("schema")
connect_args: dict = config.attributes.get("connect_args", {})


def _run(connection: Connection) -> None:
    context.configure(
        connection=connection,
        target_metadata=metadata,
        version_table_schema=schema,
        compare_server_default=True,
    )
    with context.begin_transaction():
        # Decided under the lock: a node that waited for another's install finds a revision.
        if config.attributes.get("baseline") and baseline.is_fresh(connection):
            baseline.install(connection, schema)
            context.get_context().stamp(context.script, "heads")
        else:
            context.run_migrations()


async def _run_async() -> None:
    engine = create_async_engine(url, poolclass=pool.NullPool, connect_args=connect_args)
    try:
        async with engine.connect() as connection:
            await connection.execute(text("SELECT pg_advisory_lock(:k)"), {"k": MIGRATION_LOCK_KEY})
            try:
                if schema:
                    await connection.execute(text(f'CREATE SCHEMA IF NOT EXISTS "{schema}"'))
                await connection.commit()
                await connection.run_sync(_run)
                await connection.commit()
            finally:
                await connection.execute(text("SELECT pg_advisory_unlock(:k)"), {"k": MIGRATION_LOCK_KEY})
                await connection.commit()
    finally:
        await engine.dispose()


if context.is_offline_mode():
    raise SystemExit("offline migrations are not supported; run `jobwire migrate`")
asyncio.run(_run_async())
