"""A rolling upgrade: once the first node of a new version has migrated the database, a node of
the previous version still starts (it does not try to migrate to revisions it has never heard
of) and still calls itself ready, since it keeps working on that schema. A database behind this
build is not ready until it is migrated."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from app.db.connection import DatabaseConfig
from app.db.database import Database
from app.db.migrate import head_revisions, upgrade
from app.services.health import HealthService
from tests.migrations.test_migrations import downgrade, fetch

NEWER = "20991231_9999"  # a revision of a build newer than this one


async def readiness(url: str) -> tuple[bool, str]:
    db = await Database.open(DatabaseConfig(url=url, pool_size=2))
    try:
        return await HealthService(db).readiness()
    finally:
        await db.close()


async def test_a_node_of_the_previous_version_starts_and_is_ready_on_a_newer_schema(
        fresh_database: Callable[[], Awaitable[str]]) -> None:
    url = await fresh_database()
    await upgrade(url, None)
    await fetch(url, f"UPDATE alembic_version SET version_num = '{NEWER}'")

    assert await upgrade(url, None) == (NEWER, NEWER)  # nothing applied, nothing raised
    assert await readiness(url) == (True, "ready")


async def test_a_database_behind_this_build_is_not_ready(fresh_database: Callable[[], Awaitable[str]]) -> None:
    url = await fresh_database()
    await upgrade(url, None)
    await downgrade(url, None, "-1")

    ready, detail = await readiness(url)
    assert not ready
    assert f"expected {sorted(head_revisions())}" in detail

    await upgrade(url, None)
    assert await readiness(url) == (True, "ready")
