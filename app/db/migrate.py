"""Run alembic migrations from wherever the scripts were installed.

An upgrade to head of a fresh database (no revision recorded, none of the tables) installs
today's schema in one step from the files that own it (app/db/baseline.py) and stamps it at head;
any other database, or an upgrade to an older revision, goes through the chain of revisions.
Either way in one transaction under env.py's advisory lock."""

from __future__ import annotations

import asyncio
import threading
from functools import cache
from importlib import resources
from pathlib import Path

import asyncpg
from alembic import command
from alembic.config import Config
from alembic.script import ScriptDirectory

from app.db.connection import asyncpg_dsn, connect_args, server_settings, sqlalchemy_url


def script_location() -> Path:
    """The migration scripts: shipped in the wheel as app/_migrations, or the repo's alembic/."""
    packaged = resources.files("app") / "_migrations"
    if packaged.is_dir():
        return Path(str(packaged))
    source = Path(__file__).resolve().parents[2] / "alembic"
    if (source / "env.py").is_file():
        return source
    raise RuntimeError("jobwire's migration scripts are missing from this installation")


def alembic_config(url: str, schema: str | None, *, baseline: bool = False) -> Config:
    config = Config()
    config.set_main_option("script_location", str(script_location()))
    config.attributes["url"] = sqlalchemy_url(url).render_as_string(hide_password=False)
    config.attributes["schema"] = schema
    config.attributes["connect_args"] = connect_args(schema)
    config.attributes["baseline"] = baseline
    return config


def head_revisions() -> set[str]:
    return set(ScriptDirectory(str(script_location())).get_heads())


@cache
def known_revisions() -> frozenset[str]:
    """Every revision this build's scripts have."""
    return frozenset(s.revision for s in ScriptDirectory(str(script_location())).walk_revisions())


def newer_than_this_build(revisions: set[str]) -> bool:
    """Whether the database's revisions were all written by a newer build (none of them is among
    this build's scripts). During a rolling upgrade the first node of the new version migrates;
    a node of the previous version keeps working on that schema, so it neither tries to migrate
    (alembic cannot find the revision) nor calls itself unready."""
    return bool(revisions) and not revisions & known_revisions()


# Alembic keeps its running environment (`alembic.context`, `alembic.op`) in module globals,
# so two migrations in one process (two apps' start-ups, each in a worker thread) would tear
# down each other's context. Serialise them here; across processes env.py's advisory lock does.
_IN_PROCESS = threading.Lock()


def upgrade_sync(url: str, schema: str | None, revision: str = "head") -> None:
    with _IN_PROCESS:
        command.upgrade(alembic_config(url, schema, baseline=revision == "head"), revision)


def downgrade_sync(url: str, schema: str | None, revision: str) -> None:
    with _IN_PROCESS:
        command.downgrade(alembic_config(url, schema), revision)


async def upgrade(url: str, schema: str | None) -> tuple[str | None, str | None]:
    """`alembic upgrade head`; the database's revision before and after (None: no revision yet).
    Before is read outside the migration lock: a node that starts beside another may find the
    other's work done, so it says what the database was at, not what it applied itself."""
    before = await current_revision(url, schema)
    if before is not None and newer_than_this_build(set(before.split(","))):
        return before, before
    # env.py runs its own event loop (asyncio.run), so it must not run on this one.
    await asyncio.to_thread(upgrade_sync, url, schema)
    return before, await current_revision(url, schema)


async def current_revision(url: str, schema: str | None) -> str | None:
    """The revision alembic recorded in the database (heads joined by commas), None before any."""
    conn = await asyncpg.connect(asyncpg_dsn(url), server_settings=server_settings(schema))
    try:
        if await conn.fetchval("SELECT to_regclass('alembic_version') IS NULL"):
            return None
        return await conn.fetchval("SELECT string_agg(version_num, ',' ORDER BY version_num) FROM alembic_version")
    finally:
        await conn.close()


