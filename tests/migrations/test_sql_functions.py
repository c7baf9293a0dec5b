"""Every SQL function's current text is one file in app/db/sql/functions; the newest revision
that carries a copy of it carries exactly that text, and a database at head runs exactly it."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path

import asyncpg
from sqlalchemy.engine import make_url

from app.db.functions import current_directory, files_for
from app.db.migrate import upgrade_sync

REPO = Path(__file__).resolve().parents[2]
VERSIONS = REPO / "alembic" / "versions"


def revision_copies() -> list[Path]:
    """The directories of frozen copies, oldest revision first (named by revision id)."""
    return sorted(p for p in VERSIONS.iterdir() if p.is_dir() and p.name[:8].isdigit())


def test_every_function_file_equals_its_copy_in_the_newest_revision_that_carries_it() -> None:
    current = sorted(current_directory().glob("*.sql"))
    assert current, "no function files"
    for path in current:
        carrying = [d for d in revision_copies() if (d / path.name).is_file()]
        assert carrying, f"{path.name}: no revision carries a copy of it"
        newest = carrying[-1] / path.name
        assert newest.read_text(encoding="utf-8") == path.read_text(encoding="utf-8"), (
            f"{path.name} differs from its copy in {newest.parent.name}: a changed function needs a new "
            "revision with a copy of its whole new text")


def test_a_server_version_variant_is_chosen_from_its_major_version_on(tmp_path: Path) -> None:
    for name in ("f.sql", "f.pg18.sql", "g.sql"):
        (tmp_path / name).write_text("")
    assert {n: p.name for n, p in files_for(tmp_path, 15).items()} == {"f": "f.sql", "g": "g.sql"}
    assert {n: p.name for n, p in files_for(tmp_path, 18).items()} == {"f": "f.pg18.sql", "g": "g.sql"}
    assert {n: p.name for n, p in files_for(tmp_path, 19).items()} == {"f": "f.pg18.sql", "g": "g.sql"}


DEFINITION = """
SELECT p.proname, p.prosrc, pg_get_function_identity_arguments(p.oid) AS arguments,
       pg_get_function_result(p.oid) AS result, p.provolatile, p.proisstrict, l.lanname,
       (SELECT array_agg(c ORDER BY c) FROM unnest(p.proconfig) AS c WHERE c NOT LIKE 'search_path=%') AS config,
       EXISTS (SELECT 1 FROM unnest(p.proconfig) AS c WHERE c LIKE 'search_path=%') AS pinned
FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace JOIN pg_language l ON l.oid = p.prolang
WHERE n.nspname = $1 AND p.proname LIKE 'jobwire%'
"""


async def test_a_database_at_head_runs_exactly_the_function_files(
        fresh_database: Callable[[], Awaitable[str]]) -> None:
    """A database brought to head through every revision (a fresh one would take the baseline,
    which creates the files themselves), compared with the files created afresh in an empty
    database (prosrc and the signature: pg_get_functiondef reformats the header)."""
    database_url = await fresh_database()
    await asyncio.to_thread(upgrade_sync, database_url, None, "20261129_0001")
    await asyncio.to_thread(upgrade_sync, database_url, None)
    scratch = await fresh_database()
    dsn = make_url(scratch).set(drivername="postgresql").render_as_string(hide_password=False)
    conn = await asyncpg.connect(dsn)
    try:
        major = int(await conn.fetchval("SHOW server_version_num")) // 10000
        await conn.execute("SET check_function_bodies = off")
        for path in files_for(current_directory(), major).values():
            await conn.execute(path.read_text(encoding="utf-8"))
        expected = {r["proname"]: dict(r) for r in await conn.fetch(DEFINITION, "public")}
    finally:
        await conn.close()
    head = await asyncpg.connect(make_url(database_url).set(drivername="postgresql").render_as_string(False))
    try:
        found = {r["proname"]: dict(r) for r in await head.fetch(DEFINITION, "public")}
    finally:
        await head.close()
    assert set(found) == set(expected)
    for name, definition in expected.items():
        assert found[name] == definition, f"{name} at head is not the text of its file"
