"""Migrations on fresh databases: round trip, models match head, schema placement, concurrent
starts under the advisory lock, and the scripts shipped inside the wheel."""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
import sys
import zipfile
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import asyncpg
import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import create_async_engine
from sqlalchemy.pool import NullPool

from app.db.connection import async_url, connect_args
from app.db.migrate import downgrade_sync, head_revisions, script_location, upgrade_sync
from app.db.tables import metadata

REPO = Path(__file__).resolve().parents[2]
TABLES = set(metadata.tables)
FreshDatabase = Callable[[], Awaitable[str]]


async def fetch(url: str, sql: str, *args: Any) -> list[asyncpg.Record]:
    conn = await asyncpg.connect(make_url(url).set(drivername="postgresql").render_as_string(hide_password=False))
    try:
        return await conn.fetch(sql, *args)
    finally:
        await conn.close()


async def tables_in(url: str, schema: str) -> set[str]:
    rows = await fetch(url, "SELECT tablename FROM pg_tables WHERE schemaname = $1", schema)
    return {r["tablename"] for r in rows}


async def version_rows(url: str, schema: str) -> list[str]:
    rows = await fetch(url, f'SELECT version_num FROM "{schema}".alembic_version')
    return [r["version_num"] for r in rows]


async def upgrade(url: str, schema: str | None = None, revision: str = "head") -> None:
    await asyncio.to_thread(upgrade_sync, url, schema, revision)


async def downgrade(url: str, schema: str | None, revision: str) -> None:
    await asyncio.to_thread(downgrade_sync, url, schema, revision)


async def differences(url: str, schema: str | None = None) -> list[Any]:
    # alembic compares through SQLAlchemy (the migrations' own tooling), as env.py connects.
    engine = create_async_engine(async_url(url), poolclass=NullPool, connect_args=connect_args(schema))
    try:
        async with engine.connect() as conn:
            return await conn.run_sync(lambda sync: compare_metadata(
                MigrationContext.configure(sync, opts={"compare_type": True, "compare_server_default": True}),
                metadata,
            ))
    finally:
        await engine.dispose()


async def test_upgrade_downgrade_upgrade_on_an_empty_database(fresh_database: FreshDatabase) -> None:
    url = await fresh_database()
    await upgrade(url)
    assert await tables_in(url, "public") == TABLES | {"alembic_version"}
    assert set(await version_rows(url, "public")) == head_revisions()

    await downgrade(url, None, "base")
    assert await tables_in(url, "public") == {"alembic_version"}
    assert await version_rows(url, "public") == []

    await upgrade(url)
    assert await tables_in(url, "public") == TABLES | {"alembic_version"}
    assert set(await version_rows(url, "public")) == head_revisions()
    assert await differences(url) == []


async def test_upgrade_is_idempotent_at_head(fresh_database: FreshDatabase) -> None:
    url = await fresh_database()
    await upgrade(url)
    await upgrade(url)
    assert set(await version_rows(url, "public")) == head_revisions()


async def test_models_match_the_migrations_at_head(database_url: str) -> None:
    assert await differences(database_url) == []


async def test_there_is_exactly_one_head() -> None:
    assert len(head_revisions()) == 1


async def test_partial_index_predicates_are_stored_as_written(database_url: str) -> None:
    rows = await fetch(database_url, "SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'job_executions'")
    defs = {r["indexname"]: r["indexdef"] for r in rows}
    assert "WHERE (state = 'ENQUEUED'::text)" in defs["ix_job_executions_claim"]
    assert "(queue, priority DESC, scheduled_at)" in defs["ix_job_executions_claim"]
    assert "WHERE (state = 'ENQUEUED'::text)" in defs["ix_job_executions_claim_all"]
    assert "(priority DESC, scheduled_at)" in defs["ix_job_executions_claim_all"]
    assert defs["uq_job_executions_idempotency_key"].startswith("CREATE UNIQUE INDEX")


@pytest.mark.parametrize("schema", ["jw_schema", "JwMixed"])
async def test_with_a_schema_every_table_and_the_history_land_in_it(fresh_database: FreshDatabase,
                                                                     schema: str) -> None:
    url = await fresh_database()
    await upgrade(url, schema)
    assert await tables_in(url, schema) == TABLES | {"alembic_version"}
    assert await tables_in(url, "public") == set()
    indexes = await fetch(url, "SELECT schemaname FROM pg_indexes WHERE indexname LIKE 'ix_job_%'")
    assert indexes and {r["schemaname"] for r in indexes} == {schema}
    assert set(await version_rows(url, schema)) == head_revisions()
    assert await differences(url, schema) == []

    await downgrade(url, schema, "base")
    assert await tables_in(url, schema) == {"alembic_version"}
    await upgrade(url, schema)
    assert await tables_in(url, schema) == TABLES | {"alembic_version"}
    assert await tables_in(url, "public") == set()


@pytest.mark.parametrize("schema", [None, "jw_race"])
async def test_two_migrations_started_at_once_in_threads_both_succeed(fresh_database: FreshDatabase,
                                                                      schema: str | None) -> None:
    url = await fresh_database()
    await asyncio.gather(upgrade(url, schema), upgrade(url, schema))
    where = schema or "public"
    assert await tables_in(url, where) == TABLES | {"alembic_version"}
    assert await version_rows(url, where) == sorted(head_revisions())


@pytest.mark.parametrize("schema", [None, "jw_nodes"])
async def test_two_nodes_migrating_at_once_both_succeed(fresh_database: FreshDatabase, schema: str | None) -> None:
    """Two processes, as two nodes starting together: env.py's advisory lock serialises them."""
    url = await fresh_database()
    code = "import sys; from app.db.migrate import upgrade_sync; upgrade_sync(sys.argv[1], sys.argv[2] or None)"
    procs = [await asyncio.create_subprocess_exec(sys.executable, "-c", code, url, schema or "", cwd=REPO,
                                                  stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
             for _ in range(2)]
    outputs = [await asyncio.wait_for(p.communicate(), 120) for p in procs]
    for proc, (_, err) in zip(procs, outputs, strict=True):
        assert proc.returncode == 0, err.decode()[-2000:]
    where = schema or "public"
    assert await tables_in(url, where) == TABLES | {"alembic_version"}
    assert await version_rows(url, where) == sorted(head_revisions())


def migration_lock_key() -> int:
    source = (script_location() / "env.py").read_text()
    match = re.search(r"^MIGRATION_LOCK_KEY = (0x[0-9A-Fa-f_]+)", source, re.MULTILINE)
    assert match, "env.py no longer defines MIGRATION_LOCK_KEY"
    return int(match[1].replace("_", ""), 16)


async def test_schema_creation_and_upgrade_wait_for_the_advisory_lock(fresh_database: FreshDatabase) -> None:
    url = await fresh_database()
    holder = await asyncpg.connect(make_url(url).set(drivername="postgresql").render_as_string(hide_password=False))
    try:
        await holder.execute("SELECT pg_advisory_lock($1)", migration_lock_key())
        migrating = asyncio.create_task(upgrade(url, "jw_locked"))
        await asyncio.sleep(0.7)
        assert not migrating.done()
        schemas = await fetch(url, "SELECT nspname FROM pg_namespace WHERE nspname = 'jw_locked'")
        assert schemas == [], "the schema was created before the lock was granted"
        await holder.execute("SELECT pg_advisory_unlock($1)", migration_lock_key())
        await asyncio.wait_for(migrating, 60)
    finally:
        await holder.close()
    assert await tables_in(url, "jw_locked") == TABLES | {"alembic_version"}


def test_the_wheel_ships_the_migration_scripts(tmp_path: Path) -> None:
    def build(*extra: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "pip", "wheel", "--no-deps", *extra, "--no-index", "-q", "-w", str(tmp_path),
             str(REPO)],
            capture_output=True, text=True, timeout=300,
        )

    done = build("--no-build-isolation")  # hatchling comes with the test extra
    assert done.returncode == 0, done.stderr[-2000:]
    [wheel] = tmp_path.glob("jobwire-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    assert "app/_migrations/env.py" in names
    versions = {n for n in names if n.startswith("app/_migrations/versions/") and n.endswith(".py")}
    shipped = {Path(n).name for n in versions}
    assert shipped == {p.name for p in (REPO / "alembic" / "versions").glob("*.py")}
    assert "app/db/sql/executions.sql" in names and "app/db/sql/handlers.sql" in names
    # The functions' current text, and the revisions' frozen copies of it.
    assert "app/db/sql/functions/jobwire_claim.sql" in names
    assert "app/_migrations/versions/20261201_0009/jobwire_claim.sql" in names
    assert "app/_migrations/versions/20261201_0009/before/jobwire_claim.sql" in names

    # Installed from the wheel (a pure-Python wheel unpacked is an install), not from this checkout:
    # the scripts are found through importlib.resources.
    site = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(site)
    probe = subprocess.run(
        [sys.executable, "-c",
         "import app, app.db.migrate as m; print(app.__file__); print(m.script_location()); print(m.head_revisions())"],
        capture_output=True, text=True, timeout=60, cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(site)},
    )
    assert probe.returncode == 0, probe.stderr
    app_file, location, heads = probe.stdout.splitlines()
    assert Path(app_file).is_relative_to(site)
    assert Path(location) == site / "app" / "_migrations"
    assert heads == str(head_revisions())
