"""GET /v1/executions/{id}/blockers: every reason the claim holds an ENQUEUED execution back,
each shown with its data, and exact: a probe claim (jobwire_claim itself, rolled back) takes the
execution when the list is empty and leaves it when it is not. The heartbeat rows stand for the
live nodes (the API-only server runs no loops), so each test says which queues are served."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from app.db.database import Database
from tests.api.conftest import LATER, NOWHERE
from tests.conftest import problem_fields, register, rolled_back, sql


@pytest.fixture
async def api(h_api: httpx.AsyncClient, db: Database) -> httpx.AsyncClient:
    """The shared client (tests/api/conftest.py), and a live node that claims from every queue."""
    await node_serving(db, "node-all", None)
    return h_api


async def node_serving(db: Database, server_id: str, queues: list[str] | None, *, age: float = 0) -> None:
    """A heartbeat row as a node claiming from `queues` (None: every queue) writes it, `age` s old."""
    await sql(db, "INSERT INTO job_server_heartbeats (server_id, last_heartbeat, started_at, queues) "
                  "VALUES (:id, now() - make_interval(secs => :age), now() - interval '1 hour', CAST(:q AS text[]))",
              id=server_id, age=float(age), q=queues)


async def enqueue(api: httpx.AsyncClient, **fields: Any) -> str:
    response = await api.post("/v1/jobs", json={"handler": "h", **fields})
    assert response.status_code == 201, response.text
    return response.json()["id"]


async def processing(db: Database, execution_id: str) -> None:
    """Moves an execution to PROCESSING as a claim leaves it."""
    await sql(db, "UPDATE job_executions SET state = 'PROCESSING', started_at = now(), "
                  "deadline_at = now() + interval '1 hour', locked_by = 'node-all' WHERE id = CAST(:id AS uuid)",
              id=execution_id)


async def blockers(api: httpx.AsyncClient, execution_id: str) -> dict[str, Any]:
    response = await api.get(f"/v1/executions/{execution_id}/blockers")
    assert response.status_code == 200, response.text
    return response.json()


async def a_claim_takes(db: Database, execution_id: str) -> bool:
    """Whether the claim, as a node serving every queue calls it, would take the execution now
    (in a transaction rolled back, so nothing changes)."""
    async with rolled_back(db) as conn:
        rows = await conn.fetch("SELECT id FROM jobwire_claim('probe', 1000, 60)")
    return any(str(r["id"]) == execution_id for r in rows)


async def test_nothing_holds_a_due_job_back_and_a_claim_takes_it(api, db):
    job = await enqueue(api)
    assert await blockers(api, job) == {"state": "ENQUEUED", "items": []}
    assert await a_claim_takes(db, job)


async def test_a_job_due_later_is_scheduled_until_its_time(api, db):
    job = await enqueue(api, run_at=LATER)
    assert (await blockers(api, job))["items"] == [{"reason": "scheduled", "until": "2999-01-01T00:00:00Z"}]
    assert not await a_claim_takes(db, job)


async def test_a_paused_queue_holds_its_jobs(api, db):
    job = await enqueue(api, queue="billing")
    assert (await api.post("/v1/queues/billing/pause")).status_code == 200
    assert (await blockers(api, job))["items"] == [{"reason": "queue_paused", "queue": "billing"}]
    assert not await a_claim_takes(db, job)
    assert (await api.post("/v1/queues/billing/resume")).status_code == 200
    assert (await blockers(api, job))["items"] == []
    assert await a_claim_takes(db, job)


async def test_a_handler_at_its_max_concurrency_holds_its_jobs(api, db):
    await register(api, "h", NOWHERE, max_concurrency=2)
    running = [await enqueue(api) for _ in range(2)]
    for execution_id in running:
        await processing(db, execution_id)
    job = await enqueue(api)
    assert (await blockers(api, job))["items"] == [{"reason": "handler_concurrency", "in_flight": 2, "limit": 2}]
    assert not await a_claim_takes(db, job)
    await sql(db, "UPDATE job_executions SET state = 'SUCCEEDED', completed_at = now(), locked_by = NULL "
                  "WHERE id = CAST(:id AS uuid)", id=running[0])
    assert (await blockers(api, job))["items"] == []
    assert await a_claim_takes(db, job)


async def test_a_key_at_its_key_concurrency_holds_its_jobs_and_not_another_keys(api, db):
    await register(api, "h", NOWHERE, key_concurrency=1)
    await processing(db, await enqueue(api, concurrency_key="acme"))
    job = await enqueue(api, concurrency_key="acme")
    other = await enqueue(api, concurrency_key="globex")
    assert (await blockers(api, job))["items"] == [
        {"reason": "key_concurrency", "key": "acme", "in_flight": 1, "limit": 1}]
    assert (await blockers(api, other))["items"] == []
    assert not await a_claim_takes(db, job) and await a_claim_takes(db, other)


async def test_a_paused_key_holds_its_jobs(api, db):
    job = await enqueue(api, concurrency_key="acme")
    assert (await api.post("/v1/handlers/h/keys/acme/pause")).status_code == 200
    assert (await blockers(api, job))["items"] == [{"reason": "key_paused", "key": "acme"}]
    assert not await a_claim_takes(db, job)
    assert (await api.post("/v1/handlers/h/keys/acme/resume")).status_code == 200
    assert (await blockers(api, job))["items"] == []
    assert await a_claim_takes(db, job)


async def test_a_rate_limit_names_its_next_slot_the_handlers_or_the_keys(api, db):
    await register(api, "h", NOWHERE, rate_limit={"limit": 1, "period_seconds": 3600})
    first, job = await enqueue(api), await enqueue(api)
    async with db.transaction() as conn:  # a claim that commits: the limiter moves on
        [claimed] = await conn.fetch("SELECT id FROM jobwire_claim('n', 10, 60)")
    assert str(claimed["id"]) == first
    [item] = (await blockers(api, job))["items"]
    assert item["reason"] == "rate_limit" and set(item) == {"reason", "next_slot"}
    assert not await a_claim_takes(db, job)

    await register(api, "h", NOWHERE, key_rate_limit={"limit": 1, "period_seconds": 3600})
    keyed, held = await enqueue(api, concurrency_key="acme"), await enqueue(api, concurrency_key="acme")
    async with db.transaction() as conn:
        taken = {str(r["id"]) for r in await conn.fetch("SELECT id FROM jobwire_claim('n', 10, 60)")}
    assert keyed in taken and held not in taken
    [item] = (await blockers(api, held))["items"]
    assert item["reason"] == "rate_limit" and item["key"] == "acme" and "next_slot" in item
    assert not await a_claim_takes(db, held)


async def test_an_open_circuit_and_a_retry_after_hold_the_handler_or_its_key(api, db):
    job, keyed = await enqueue(api), await enqueue(api, concurrency_key="acme")
    await sql(db, "UPDATE job_handler_flow SET circuit_state = 'open', circuit_until = '2999-01-01T00:00:00Z', "
                  "circuit_failures = 5, retry_after = '2999-01-01T00:00:00Z'")  # the key's job made the row
    await sql(db, "INSERT INTO job_keys (handler, key, retry_after) VALUES ('h', 'acme', '2999-01-01T00:00:00Z')")
    assert (await blockers(api, job))["items"] == [
        {"reason": "circuit_open", "until": LATER}, {"reason": "retry_after", "until": LATER}]
    assert (await blockers(api, keyed))["items"] == [
        {"reason": "circuit_open", "until": LATER}, {"reason": "retry_after", "until": LATER},
        {"reason": "retry_after", "key": "acme", "until": LATER}]
    assert not await a_claim_takes(db, job) and not await a_claim_takes(db, keyed)
    await sql(db, "UPDATE job_handler_flow SET circuit_state = 'closed', retry_after = NULL")
    assert (await blockers(api, job))["items"] == [] and await a_claim_takes(db, job)
    assert not await a_claim_takes(db, keyed)


async def test_an_adaptive_handler_at_its_effective_limit_holds_its_jobs(api, db):
    await register(api, "h", NOWHERE, max_concurrency=10, adaptive=True)
    await sql(db, "INSERT INTO job_handler_flow (handler, adaptive_limit) VALUES ('h', 2)")
    for execution_id in [await enqueue(api) for _ in range(2)]:
        await processing(db, execution_id)
    job, keyed = await enqueue(api), await enqueue(api, concurrency_key="acme")
    assert (await blockers(api, job))["items"] == [{"reason": "adaptive_limit", "in_flight": 2, "limit": 2}]
    assert (await blockers(api, keyed))["items"] == []  # a key has a limit of its own (4 to start)
    assert not await a_claim_takes(db, job) and await a_claim_takes(db, keyed)


async def test_a_stateful_job_waits_for_the_one_running_and_for_the_one_ahead(api, db):
    holder = await enqueue(api, queue="ledger", stateful=True)
    await processing(db, holder)
    first = await enqueue(api, queue="ledger", stateful=True)
    second = await enqueue(api, queue="ledger", stateful=True)
    other = await enqueue(api, queue="ledger")  # not stateful: not held back
    assert (await blockers(api, first))["items"] == [
        {"reason": "stateful", "execution_id": holder, "state": "PROCESSING"}]
    assert (await blockers(api, other))["items"] == []
    assert not await a_claim_takes(db, first) and await a_claim_takes(db, other)

    await sql(db, "UPDATE job_executions SET state = 'SUCCEEDED', completed_at = now(), locked_by = NULL "
                  "WHERE id = CAST(:id AS uuid)", id=holder)
    assert (await blockers(api, first))["items"] == []
    assert (await blockers(api, second))["items"] == [
        {"reason": "stateful", "execution_id": first, "state": "ENQUEUED"}]
    assert await a_claim_takes(db, first) and not await a_claim_takes(db, second)


async def test_a_queue_no_live_node_claims_from_is_named(api, db):
    await sql(db, "DELETE FROM job_server_heartbeats")
    await node_serving(db, "node-mail", ["mail"])
    await node_serving(db, "node-dead", None, age=3600)  # silent for an hour: dead
    job = await enqueue(api, queue="reports")
    assert (await blockers(api, job))["items"] == [{"reason": "no_node_serves_queue", "queue": "reports"}]
    mail = await enqueue(api, queue="mail")
    assert (await blockers(api, mail))["items"] == []


async def test_every_reason_at_once_in_one_answer(api, db):
    await sql(db, "DELETE FROM job_server_heartbeats")
    await register(api, "h", NOWHERE, max_concurrency=1)
    await processing(db, await enqueue(api, queue="q", stateful=True))
    job = await enqueue(api, queue="q", stateful=True, run_at=LATER)
    assert (await api.post("/v1/queues/q/pause")).status_code == 200
    reasons = [item["reason"] for item in (await blockers(api, job))["items"]]
    assert reasons == ["scheduled", "queue_paused", "handler_concurrency", "stateful", "no_node_serves_queue"]


@pytest.mark.parametrize("state", ["PROCESSING", "SUCCEEDED", "DEAD_LETTER", "CANCELLED"])
async def test_an_execution_that_is_not_enqueued_is_held_back_by_nothing(api, db, state):
    job = await enqueue(api, run_at=LATER)
    await sql(db, "UPDATE job_executions SET state = :state WHERE id = CAST(:id AS uuid)", state=state, id=job)
    assert await blockers(api, job) == {"state": state, "items": []}


async def test_an_unknown_execution_is_a_404_and_a_malformed_id_a_422(api, db):
    problem_fields(await api.get("/v1/executions/01234567-89ab-7def-8123-456789abcdef/blockers"), 404)
    assert problem_fields(await api.get("/v1/executions/nope/blockers"), 422) == ["execution_id"]


async def test_a_node_writes_the_queues_it_claims_from_into_its_heartbeat(jobwire, db):
    server = await jobwire(queues="mail,reports")
    async with httpx.AsyncClient(base_url=server.url, timeout=10) as client:
        nodes = (await client.get("/v1/nodes")).json()["items"]
    assert [n["queues"] for n in nodes] == [["mail", "reports"]]
