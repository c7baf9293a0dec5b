"""A fresh database installs today's schema from the baseline (app/db/baseline.py); an existing one
upgrades through the chain of revisions; both end in the same catalogue, and a database installed
from the baseline walks down the chain as one built by it."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

import pytest
from alembic.script import ScriptDirectory

from app.db.migrate import script_location
from tests.conftest import admin
from tests.migrations import catalogue
from tests.migrations.test_migrations import differences, downgrade, upgrade

FreshDatabase = Callable[[], Awaitable[str]]
FIRST = "20261129_0001"
INSTALLED = "baseline: a fresh database, today's schema installed from the files in one step"


def chain() -> list[str]:
    """Every revision, oldest first."""
    return [r.revision for r in reversed(list(ScriptDirectory(str(script_location())).walk_revisions()))]


def steps_run(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records
            if r.getMessage().startswith("Running upgrade") or r.getMessage() == INSTALLED]


@pytest.mark.parametrize("schema", [None, "JwBaseline"])
async def test_a_fresh_database_from_the_baseline_has_the_catalogue_of_one_built_through_every_revision(
        fresh_database: FreshDatabase, caplog: pytest.LogCaptureFixture, schema: str | None) -> None:
    where = schema or "public"
    through_chain, from_baseline = await fresh_database(), await fresh_database()
    caplog.set_level(logging.INFO)
    await upgrade(through_chain, schema, FIRST)  # not fresh any more: head is reached through the chain
    await upgrade(through_chain, schema)
    assert len(steps_run(caplog)) == len(chain()) and "baseline" not in " ".join(steps_run(caplog))
    caplog.clear()
    await upgrade(from_baseline, schema)
    assert steps_run(caplog) == [INSTALLED]

    expected = await catalogue.read(through_chain, where)
    assert len(expected["relation"]) > 10 and len(expected["function"]) > 5 and expected["rows of job_meta"]
    assert catalogue.differences(expected, await catalogue.read(from_baseline, where)) == []
    if schema:  # and nothing of it anywhere else
        assert catalogue.differences(await catalogue.read(through_chain), await catalogue.read(from_baseline)) == []
        assert (await catalogue.read(from_baseline))["relation"] == {}
    assert await differences(from_baseline, schema) == [] and await differences(through_chain, schema) == []


async def test_the_catalogue_comparison_finds_a_dropped_index_and_an_altered_function(
        fresh_database: FreshDatabase) -> None:
    pristine, damaged = await fresh_database(), await fresh_database()
    await asyncio.gather(upgrade(pristine), upgrade(damaged))
    assert catalogue.differences(await catalogue.read(pristine), await catalogue.read(damaged)) == []

    await admin(damaged, "DROP INDEX ix_job_executions_claim")
    await admin(damaged, """
        CREATE OR REPLACE FUNCTION jobwire_enqueue_refuse(errors jsonb) RETURNS void LANGUAGE plpgsql
        SET search_path FROM CURRENT AS $function$ BEGIN END $function$""")
    found = catalogue.differences(await catalogue.read(pristine), await catalogue.read(damaged))
    assert [line.split(":")[0] for line in found] == [
        "function jobwire_enqueue_refuse.errors jsonb", "index ix_job_executions_claim"], found
    assert found[1] == "index ix_job_executions_claim: missing"


async def test_a_database_from_the_baseline_downgrades_step_by_step_as_one_built_through_the_chain(
        fresh_database: FreshDatabase, caplog: pytest.LogCaptureFixture) -> None:
    """Both walk down every revision in step, compared at each; then down to base and up again."""
    through_chain, from_baseline = await fresh_database(), await fresh_database()
    await upgrade(through_chain, None, FIRST)
    await upgrade(through_chain)
    caplog.set_level(logging.INFO)
    caplog.clear()
    await upgrade(from_baseline)
    assert steps_run(caplog) == [INSTALLED]
    for revision in reversed(chain()[:-1]):
        await asyncio.gather(downgrade(through_chain, None, revision), downgrade(from_baseline, None, revision))
        expected, found = await catalogue.read(through_chain), await catalogue.read(from_baseline)
        assert expected["rows of alembic_version"] == {(revision,): ()}
        assert catalogue.differences(expected, found) == [], f"downgraded to {revision}"

    await downgrade(from_baseline, None, "base")
    assert set((await catalogue.read(from_baseline))["relation"]) == {("alembic_version",)}
    caplog.clear()
    await upgrade(from_baseline)
    assert steps_run(caplog) == [INSTALLED]
    await upgrade(through_chain)
    assert catalogue.differences(await catalogue.read(through_chain), await catalogue.read(from_baseline)) == []


async def test_a_database_with_a_revision_upgrades_through_the_chain_even_if_its_tables_are_gone(
        fresh_database: FreshDatabase, caplog: pytest.LogCaptureFixture) -> None:
    # A recorded revision is never overridden by the baseline: what is wrong with such a database
    # shows as the revision's own error, not as a second schema installed over it.
    url = await fresh_database()
    await upgrade(url, None, "20261201_0011")
    await admin(url, "DROP TABLE job_api_keys, job_handler_secrets, job_steps, job_logs, job_schedule_fires, "
                     "job_events, job_executions, job_schedules, job_handlers, job_queues, job_server_heartbeats, "
                     "job_meta")
    caplog.set_level(logging.INFO)
    with pytest.raises(Exception, match="job_handlers"):
        await upgrade(url)
    assert [step.partition(",")[0] for step in steps_run(caplog)] == ["Running upgrade 20261201_0011 -> 20261201_0012"]
