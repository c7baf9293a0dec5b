"""Revision 20261201_0012: the claim written once, under the same signature; job_handlers.secret, a
copy of each handler's first signing secret that no rotation updated, cleared (and kept, nullable,
for a node of the previous version); its downgrade gives revision 0011's code what it needs."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import asyncpg
from sqlalchemy.engine import make_url

from app.db.migrate import head_revisions
from tests.conftest import admin
from tests.migrations import catalogue
from tests.migrations.test_migrations import downgrade, upgrade

FreshDatabase = Callable[[], Awaitable[str]]
BEFORE = "20261201_0011"
THIS = "20261201_0012"  # a later revision (0014) changes the claim's result

# Two handlers as revision 0011's code leaves them: the first secret in job_handlers.secret too;
# "rotated" has since signed with a second one and retired the first.
HANDLERS_AT_0011 = """
INSERT INTO job_handlers (name, url, secret) VALUES ('plain', 'http://127.0.0.1:9/p', 'whsec_cGxhaW4tZmlyc3Q='),
                                                    ('rotated', 'http://127.0.0.1:9/r', 'whsec_cm90YXRlZC1maXJzdA==');
INSERT INTO job_handler_secrets (handler, secret, created_at, expires_at) VALUES
    ('plain', 'whsec_cGxhaW4tZmlyc3Q=', now() - interval '2 days', NULL),
    ('rotated', 'whsec_cm90YXRlZC1maXJzdA==', now() - interval '2 days', now() - interval '1 day'),
    ('rotated', 'whsec_cm90YXRlZC1uZXc=', now() - interval '1 day', NULL);
"""
CLAIM_SIGNATURE = """
SELECT pg_get_function_identity_arguments(p.oid), pg_get_function_result(p.oid)
FROM pg_proc p WHERE p.proname = 'jobwire_claim' AND p.pronamespace = 'public'::regnamespace
"""


async def query(url: str, sql: str) -> list[Any]:
    conn = await asyncpg.connect(make_url(url).set(drivername="postgresql").render_as_string(hide_password=False))
    try:
        return [tuple(r) for r in await conn.fetch(sql)]
    finally:
        await conn.close()


async def at_0011_with_handlers(fresh_database: FreshDatabase) -> str:
    url = await fresh_database()
    await upgrade(url, None, BEFORE)
    await admin(url, HANDLERS_AT_0011)
    return url


async def test_the_upgrade_clears_every_first_secret_and_the_claim_still_signs_with_the_active_ones(
        fresh_database: FreshDatabase) -> None:
    url = await at_0011_with_handlers(fresh_database)
    signature = await query(url, CLAIM_SIGNATURE)
    secrets = await query(url, "SELECT handler, secret, expires_at FROM job_handler_secrets ORDER BY 1, 2")

    await upgrade(url, None, THIS)
    assert await query(url, "SELECT name, secret FROM job_handlers ORDER BY name") == [("plain", None),
                                                                                      ("rotated", None)]
    assert await query(url, "SELECT handler, secret, expires_at FROM job_handler_secrets ORDER BY 1, 2") == secrets
    # Same arguments and RETURNS TABLE: a node of the previous version calls it as before.
    assert await query(url, CLAIM_SIGNATURE) == signature

    await admin(url, "INSERT INTO job_executions (job_id, job_type, handler, state, priority) VALUES "
                     "('a', 'DELAYED', 'plain', 'ENQUEUED', 1), ('b', 'DELAYED', 'rotated', 'ENQUEUED', 0)")
    claimed = await query(url, "SELECT job_id, handler_url, handler_secret, handler_secrets "
                               "FROM jobwire_claim('node-1', 10, 60.0)")
    assert claimed == [("a", "http://127.0.0.1:9/p", "whsec_cGxhaW4tZmlyc3Q=", ["whsec_cGxhaW4tZmlyc3Q="]),
                       ("b", "http://127.0.0.1:9/r", "whsec_cm90YXRlZC1uZXc=", ["whsec_cm90YXRlZC1uZXc="])]


async def test_a_node_of_the_previous_version_still_inserts_a_handler_naming_the_column(
        fresh_database: FreshDatabase) -> None:
    url = await fresh_database()
    await upgrade(url)
    # The insert of revision 0011's handler_upsert, as such a node sends it during a rolling upgrade.
    await admin(url, "INSERT INTO job_handlers (name, url, timeout_seconds, max_concurrency, stateful, secret) "
                     "VALUES ('old-node', 'http://127.0.0.1:9/o', NULL, NULL, false, 'whsec_b2xk')")
    assert await query(url, "SELECT name FROM job_handlers") == [("old-node",)]
    [(comment,)] = await query(url, "SELECT col_description('job_handlers'::regclass, attnum) FROM pg_attribute "
                                    "WHERE attrelid = 'job_handlers'::regclass AND attname = 'secret'")
    assert comment.startswith("Deprecated")


async def test_the_downgrade_restores_the_claim_of_0011_and_0011s_own_downgrade_the_newest_secret(
        fresh_database: FreshDatabase) -> None:
    url, reference = await at_0011_with_handlers(fresh_database), await fresh_database()
    await upgrade(reference, None, BEFORE)
    await admin(reference, HANDLERS_AT_0011)
    await upgrade(url)

    await downgrade(url, None, BEFORE)
    expected, found = await catalogue.read(reference), await catalogue.read(url)
    assert catalogue.differences(expected, found) == []
    # 0011's code never reads the column, so NULL is what it copes with ...
    assert await query(url, "SELECT name, secret FROM job_handlers ORDER BY name") == [("plain", None),
                                                                                      ("rotated", None)]
    # ... and going further down fills it with each handler's newest secret, for the version before.
    await downgrade(url, None, "20261201_0010")
    assert await query(url, "SELECT name, secret FROM job_handlers ORDER BY name") == [
        ("plain", "whsec_cGxhaW4tZmlyc3Q="), ("rotated", "whsec_cm90YXRlZC1uZXc=")]
    await upgrade(url)
    assert await query(url, "SELECT version_num FROM alembic_version") == [(h,) for h in sorted(head_revisions())]
