"""Revision 20261130_0002 creates jobwire_enqueue (and its helpers) in the schema of the tables,
pinned to that schema and to UTC, notifying the channel the nodes of that schema LISTEN on; its
downgrade drops them."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import pytest

from app.db.database import notify_channel
from app.db.migrate import downgrade_sync, upgrade_sync
from tests.migrations.test_migrations import fetch

FUNCTIONS = {"jobwire_enqueue", "jobwire_enqueue_refuse", "jobwire_parse_time"}


async def functions(url: str) -> dict[str, tuple[str, list[str], str]]:
    rows = await fetch(url, "SELECT p.proname, n.nspname, p.proconfig, p.prosrc FROM pg_proc p "
                            "JOIN pg_namespace n ON n.oid = p.pronamespace WHERE p.proname LIKE 'jobwire%'")
    return {r["proname"]: (r["nspname"], r["proconfig"] or [], r["prosrc"]) for r in rows}


@pytest.mark.parametrize("schema", [None, "jw_fn", "JwFnMixed"])
async def test_the_function_lives_beside_the_tables_pinned_to_them_and_goes_on_downgrade(
        fresh_database: Callable[[], Awaitable[str]], schema: str | None) -> None:
    url = await fresh_database()
    await asyncio.to_thread(upgrade_sync, url, schema, "20261130_0002")
    found = await functions(url)
    assert set(found) == FUNCTIONS
    where = schema or "public"
    quoted = f'"{where}"' if where != where.lower() else where
    for _, (namespace, config, _source) in found.items():
        assert namespace == where
        assert f"search_path={quoted}" in config
    _, config, source = found["jobwire_enqueue"]
    assert "TimeZone=UTC" in config
    channel = notify_channel(schema)
    assert f"pg_notify('{channel}', '')" in source

    await asyncio.to_thread(downgrade_sync, url, schema, "20261129_0001")
    assert await functions(url) == {}
    await asyncio.to_thread(upgrade_sync, url, schema, "20261130_0002")
    assert set(await functions(url)) == FUNCTIONS
