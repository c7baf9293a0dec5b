"""The workflow routes against an API-only server (nothing is dispatched): every refusal of a
graph (the exact field of each), atomicity, idempotency keys, jobs added to a workflow (parents
running, succeeded, failed), the listings and their pages, cancels and retries, and a key limited
to queues. The database is written to directly only to end a job where the API cannot (a job
SUCCEEDED or DEAD_LETTER without a handler), as a node would: the trigger then settles its
children exactly as in production."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from app.db.database import Database
from tests.conftest import PROBLEM, RunningServer, problem_fields, scalar, sql

BOOT = {"authorization": "Bearer boot"}
NOWHERE = "http://127.0.0.1:9/jobs"  # port 9 (discard): nothing answers
LATER = "2999-01-01T00:00:00Z"  # keeps a job ENQUEUED, never due
MISSING = "00000000-0000-4000-8000-00000000dead"


def bearer(key: str) -> dict[str, str]:
    return {"authorization": f"Bearer {key}"}


def job(ref: str, *parents: str, **extra: Any) -> dict[str, Any]:
    """A job of handler h that never becomes due, depending on `parents`."""
    return {"ref": ref, "handler": "h", "run_at": LATER, "payload": {"ref": ref}, "depends_on": list(parents),
            **extra}


@pytest.fixture
async def client(boot_server: RunningServer, db: Database) -> AsyncIterator[httpx.AsyncClient]:
    """The module's API-only server (closed by the bootstrap key, sent by default) with the tables
    emptied and handler h registered where nothing answers."""
    async with httpx.AsyncClient(base_url=boot_server.url, timeout=30, headers=BOOT) as c:
        assert (await c.put("/v1/handlers/h", json={"url": NOWHERE})).status_code == 201
        yield c


async def create(client: httpx.AsyncClient, jobs: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    response = await client.post("/v1/workflows", json={"jobs": jobs, **extra})
    assert response.status_code == 201, response.text
    return response.json()


def ids_of(made: dict[str, Any]) -> dict[str, str]:
    return {i["ref"]: i["execution_id"] for i in made["items"]}


async def execution(client: httpx.AsyncClient, execution_id: str) -> dict[str, Any]:
    response = await client.get(f"/v1/executions/{execution_id}")
    assert response.status_code == 200, response.text
    return response.json()


async def states(client: httpx.AsyncClient, workflow_id: str) -> dict[str, str]:
    page = (await client.get(f"/v1/workflows/{workflow_id}/jobs", params={"limit": 1000})).json()
    return {j["ref"]: j["state"] for j in page["items"]}


async def end(db: Database, execution_id: str, state: str) -> None:
    """Ends a job as a node would (a handler's answer the API-only server never gets)."""
    await sql(db, "UPDATE job_executions SET state = :state, completed_at = now(), updated_at = now() "
                  "WHERE id = :id", state=state, id=uuid.UUID(execution_id))


async def stored(db: Database) -> tuple[int, int, int]:
    """(workflows, executions, dependencies) stored."""
    return (await scalar(db, "SELECT count(*) FROM job_workflows"),
            await scalar(db, "SELECT count(*) FROM job_executions"),
            await scalar(db, "SELECT count(*) FROM job_dependencies"))


CONSISTENCY = """
SELECT 'WAITING with every parent terminal' AS fault, e.workflow_ref AS ref FROM job_executions e
WHERE e.state = 'WAITING' AND NOT EXISTS (
    SELECT 1 FROM job_dependencies d JOIN job_executions p ON p.id = d.parent_id
    WHERE d.child_id = e.id AND p.state NOT IN ('SUCCEEDED', 'DEAD_LETTER', 'CANCELLED'))
UNION ALL
SELECT 'pending_parents is not its parents unfinished', e.workflow_ref FROM job_executions e
WHERE e.state = 'WAITING' AND e.pending_parents IS DISTINCT FROM (
    SELECT count(*) FROM job_dependencies d JOIN job_executions p ON p.id = d.parent_id
    WHERE d.child_id = e.id AND p.state NOT IN ('SUCCEEDED', 'DEAD_LETTER', 'CANCELLED'))
UNION ALL
SELECT 'due or running with a parent unfinished', e.workflow_ref FROM job_executions e
WHERE e.state IN ('ENQUEUED', 'PROCESSING') AND EXISTS (
    SELECT 1 FROM job_dependencies d JOIN job_executions p ON p.id = d.parent_id
    WHERE d.child_id = e.id AND p.state NOT IN ('SUCCEEDED', 'DEAD_LETTER', 'CANCELLED'))
UNION ALL
SELECT 'counts, jobs or state of the workflow are not its jobs', CAST(w.id AS text) FROM job_workflows w
LEFT JOIN LATERAL (
    SELECT count(*) AS jobs,
           count(*) FILTER (WHERE e.state NOT IN ('SUCCEEDED', 'DEAD_LETTER', 'CANCELLED')) AS unfinished,
           COALESCE(jsonb_object_agg(e.state, e.n), '{}') AS counts
    FROM (SELECT x.state, count(*) AS n FROM job_executions x WHERE x.workflow_id = w.id GROUP BY x.state) AS e
) AS a ON true
WHERE (SELECT COALESCE(jsonb_object_agg(k.state, k.n), '{}')
        FROM (SELECT y.state, sum(y.n) AS n
              FROM (SELECT c.key AS state, CAST(c.value AS int) AS n FROM jsonb_each_text(w.counts) c
                    UNION ALL  -- the moves appended beside the row, not folded in yet
                    SELECT d.state, d.n FROM job_workflow_deltas d WHERE d.workflow_id = w.id) AS y
              GROUP BY y.state HAVING sum(y.n) <> 0) AS k) <> a.counts
   OR w.jobs <> (SELECT count(*) FROM job_executions x WHERE x.workflow_id = w.id)
   OR w.unfinished <> (SELECT count(*) FROM job_executions x WHERE x.workflow_id = w.id
                       AND x.state NOT IN ('SUCCEEDED', 'DEAD_LETTER', 'CANCELLED'))
   OR (w.state = 'RUNNING') <> (w.unfinished > 0)
"""


async def assert_consistent(db: Database) -> None:
    """Every job and workflow is as the transitions should have left it: no job WAITING for
    nothing, none due before its parents ended, each workflow's counts its jobs' states."""
    faults = [(r["fault"], r["ref"]) for r in await sql(db, CONSISTENCY)]
    assert faults == [], faults


# --- the graph's refusals ------------------------------------------------------------------

DEBOUNCE = {"key": "k", "delay_seconds": 5}


@pytest.mark.parametrize(("jobs", "fields"), [
    ([job("a"), job("b", "x")], ["jobs[1].depends_on[0]"]),  # an unknown ref
    ([job("a"), job("b", "a", "nope")], ["jobs[1].depends_on[1]"]),
    ([job("a"), job("a")], ["jobs[1].ref"]),  # a duplicate ref
    ([job("a"), job("b"), job("c"), job("b")], ["jobs[3].ref"]),
    ([job("a", "a")], ["jobs[0].depends_on[0]"]),  # itself
    ([job("a"), job("b", "a", "a")], ["jobs[1].depends_on[1]"]),  # a ref named twice in one depends_on
    ([job("a"), job("a"), job("b", "x"), job("c", "c")],  # every fault at once, each named
     ["jobs[1].ref", "jobs[2].depends_on[0]", "jobs[3].depends_on[0]"]),
    ([job("a", debounce=DEBOUNCE)], ["jobs[0].debounce"]),
    ([job("a"), job("b", "a"), job("c", debounce=DEBOUNCE), job("d", debounce=DEBOUNCE)],
     ["jobs[2].debounce", "jobs[3].debounce"]),
    ([job("a"), job("b", "a", handler="unregistered")], ["jobs[1].handler"]),
    ([], ["jobs"]),
    ([job(f"j{i}") for i in range(1001)], ["jobs"]),
], ids=["unknown", "unknown-second", "duplicate", "duplicate-later", "self", "named-twice", "all-at-once",
        "debounce", "debounce-two", "unregistered-handler", "no-jobs", "too-many-jobs"])
async def test_a_bad_graph_is_422_naming_each_field_and_stores_nothing(
        client: httpx.AsyncClient, db: Database, jobs: list[dict[str, Any]], fields: list[str]) -> None:
    response = await client.post("/v1/workflows", json={"name": "bad", "jobs": jobs})
    assert sorted(problem_fields(response, 422)) == sorted(fields)
    assert await stored(db) == (0, 0, 0)


@pytest.mark.parametrize(("jobs", "field", "message"), [
    ([job("a", "c"), job("b", "a"), job("c", "b")], "jobs[0].depends_on[0]", "a cycle: a → c → b → a"),
    ([job("x"), job("a", "x", "b"), job("b", "a")], "jobs[1].depends_on[1]", "a cycle: a → b → a"),
    ([job("root"), job("p", "q"), job("q", "root", "p")], "jobs[1].depends_on[0]", "a cycle: p → q → p"),
], ids=["three", "two-after-a-root", "two-with-a-root-parent"])
async def test_a_cycle_is_422_naming_its_refs(client: httpx.AsyncClient, db: Database,
                                             jobs: list[dict[str, Any]], field: str, message: str) -> None:
    response = await client.post("/v1/workflows", json={"jobs": jobs})
    assert problem_fields(response, 422) == [field]
    assert [e["message"] for e in response.json()["errors"]] == [message]
    assert await stored(db) == (0, 0, 0)


async def test_a_long_chain_is_no_cycle_and_a_cycle_through_it_is_found(client: httpx.AsyncClient,
                                                                        db: Database) -> None:
    chain = [job("c0000")] + [job(f"c{i:04d}", f"c{i - 1:04d}") for i in range(1, 1000)]
    made = await create(client, chain)
    assert made["counts"] == {"ENQUEUED": 1, "WAITING": 999} and made["jobs"] == 1000
    looped = [job("c0000", "c0999")] + chain[1:]
    response = await client.post("/v1/workflows", json={"jobs": looped})
    assert problem_fields(response, 422) == ["jobs[0].depends_on[0]"]
    message = response.json()["errors"][0]["message"]
    assert message == "a cycle: " + " → ".join(["c0000", *(f"c{i:04d}" for i in range(999, 0, -1)), "c0000"])
    assert await scalar(db, "SELECT count(*) FROM job_workflows") == 1
    await assert_consistent(db)


async def test_a_job_whose_idempotency_key_names_a_stored_execution_is_422_and_nothing_is_stored(
        client: httpx.AsyncClient, db: Database) -> None:
    single = await client.post("/v1/jobs", json={"handler": "h", "run_at": LATER, "idempotency_key": "taken"})
    assert single.status_code == 201, single.text
    for body in ({"handler": "h", "run_at": LATER},  # the very request stored: still not a new job
                 {"handler": "h", "run_at": LATER, "payload": {"other": 1}}):
        response = await client.post("/v1/workflows", json={"jobs": [
            job("a"), job("b", "a"), {"ref": "c", "depends_on": ["b"], "idempotency_key": "taken", **body}]})
        assert problem_fields(response, 422) == ["jobs[2].idempotency_key"]
    assert await stored(db) == (0, 1, 0)
    [row] = await sql(db, "SELECT id, workflow_id FROM job_executions")
    assert str(row["id"]) == single.json()["id"] and row["workflow_id"] is None


async def test_one_bad_job_among_many_stores_neither_a_job_nor_the_workflow(client: httpx.AsyncClient,
                                                                            db: Database) -> None:
    """The fault the database finds (the handler of job 998) after 998 jobs were inserted."""
    jobs = [job(f"j{i:03d}", *([f"j{i - 1:03d}"] if i else [])) for i in range(1000)]
    jobs[998]["handler"] = "gone"
    response = await client.post("/v1/workflows", json={"name": "atomic", "idempotency_key": "atomic", "jobs": jobs})
    assert problem_fields(response, 422) == ["jobs[998].handler"]
    assert await stored(db) == (0, 0, 0)
    assert await scalar(db, "SELECT count(*) FROM job_events") == 0
    # The key is free: the fixed request makes the workflow.
    jobs[998]["handler"] = "h"
    made = await create(client, jobs, name="atomic", idempotency_key="atomic")
    assert made["jobs"] == 1000 and await stored(db) == (1, 1000, 999)


# --- idempotency -----------------------------------------------------------------------------

async def test_a_repeated_idempotency_key_answers_the_stored_workflow_and_another_body_is_422(
        client: httpx.AsyncClient, db: Database) -> None:
    body = {"name": "nightly", "metadata": {"run": 7}, "idempotency_key": "nightly-7",
            "jobs": [job("extract"), job("load", "extract"), job("report", "load", on_dependency_failure="run")]}
    first = await client.post("/v1/workflows", json=body)
    assert first.status_code == 201, first.text
    made = first.json()
    assert [(i["ref"], i["state"]) for i in made["items"]] == [
        ("extract", "ENQUEUED"), ("load", "WAITING"), ("report", "WAITING")]
    again = await client.post("/v1/workflows", json=body)
    assert again.status_code == 200, again.text
    assert again.json()["id"] == made["id"] and again.json()["items"] == made["items"]
    assert {k: v for k, v in again.json().items() if k != "updated_at"} == \
        {k: v for k, v in made.items() if k != "updated_at"}
    assert await stored(db) == (1, 3, 2)

    for other in ({**body, "name": "weekly"}, {**body, "metadata": {"run": 8}},
                  {**body, "jobs": body["jobs"][:2]},
                  {**body, "jobs": [body["jobs"][0], {**body["jobs"][1], "payload": {"x": 1}}, body["jobs"][2]]},
                  {**body, "jobs": [*body["jobs"][:2], {**body["jobs"][2], "on_dependency_failure": "cancel"}]},
                  {**body, "jobs": [body["jobs"][1], body["jobs"][0], body["jobs"][2]]}):
        response = await client.post("/v1/workflows", json=other)
        assert problem_fields(response, 422) == ["idempotency_key"]
    assert await stored(db) == (1, 3, 2)

    # The repeat answers the jobs as they are now.
    assert (await client.post(f"/v1/executions/{made['items'][0]['execution_id']}/cancel")).status_code == 200
    later = (await client.post("/v1/workflows", json=body)).json()
    assert later["id"] == made["id"]
    assert [(i["ref"], i["state"]) for i in later["items"]] == [
        ("extract", "CANCELLED"), ("load", "CANCELLED"), ("report", "ENQUEUED")]
    await assert_consistent(db)


async def test_two_requests_racing_with_one_idempotency_key_make_one_workflow(client: httpx.AsyncClient,
                                                                              db: Database) -> None:
    body = {"idempotency_key": "race", "jobs": [job(f"j{i}", *([f"j{i - 1}"] if i else [])) for i in range(50)]}
    answers = await asyncio.gather(*(client.post("/v1/workflows", json=body) for _ in range(6)))
    assert sorted(a.status_code for a in answers) == [200] * 5 + [201], [a.text for a in answers]
    assert len({a.json()["id"] for a in answers}) == 1
    assert all(a.json()["items"] == answers[0].json()["items"] for a in answers)
    assert await stored(db) == (1, 50, 49)


# --- a queue-limited key -------------------------------------------------------------------

async def new_key(client: httpx.AsyncClient, scopes: list[str], queues: list[str]) -> dict[str, str]:
    response = await client.post("/v1/api-keys", json={"name": "limited", "scopes": scopes, "queues": queues})
    assert response.status_code == 201, response.text
    return bearer(response.json()["key"])


async def test_a_queue_limited_key_may_not_enqueue_a_workflow_job_into_another_queue(
        client: httpx.AsyncClient, db: Database) -> None:
    key = await new_key(client, ["enqueue", "read"], ["q"])
    response = await client.post("/v1/workflows", headers=key, json={"jobs": [
        job("a", queue="q"), job("b", "a", queue="r"), job("c", "b", queue="q")]})
    assert problem_fields(response, 403) == []
    assert "limited to queues [q]" in response.json()["detail"]
    assert "jobs[1].queue 'r'" in response.json()["detail"]
    default = await client.post("/v1/workflows", headers=key, json={"jobs": [job("a", queue="q"), job("b", "a")]})
    assert problem_fields(default, 403) == [] and "jobs[1].queue 'default'" in default.json()["detail"]
    assert await stored(db) == (0, 0, 0)

    made = await client.post("/v1/workflows", headers=key,
                             json={"jobs": [job("a", queue="q"), job("b", "a", queue="q")]})
    assert made.status_code == 201, made.text
    workflow = made.json()["id"]
    added = await client.post(f"/v1/workflows/{workflow}/jobs", headers=key, json={"jobs": [
        job("c", "b", queue="q"), job("d", "c", queue="r")]})
    assert problem_fields(added, 403) == [] and "jobs[1].queue 'r'" in added.json()["detail"]
    assert await stored(db) == (1, 2, 1)
    assert (await client.get(f"/v1/workflows/{workflow}", headers=key)).json()["jobs"] == 2


async def test_a_queue_limited_key_sees_only_workflows_all_in_its_queues(client: httpx.AsyncClient,
                                                                         db: Database) -> None:
    key = await new_key(client, ["read", "enqueue", "operate"], ["q"])
    mine = await create(client, [job("a", queue="q"), job("b", "a", queue="q")], name="mine")
    mixed = await create(client, [job("a", queue="q"), job("b", "a", queue="r")], name="mixed")
    elsewhere = await create(client, [job("a", queue="r")], name="elsewhere")

    listed = (await client.get("/v1/workflows", headers=key)).json()
    assert [w["id"] for w in listed["items"]] == [mine["id"]] and listed["next_cursor"] is None
    assert (await client.get("/v1/workflows", params={"name": "mixed"}, headers=key)).json()["items"] == []
    assert len((await client.get("/v1/workflows")).json()["items"]) == 3  # the unlimited key sees all

    assert (await client.get(f"/v1/workflows/{mine['id']}", headers=key)).status_code == 200
    jobs = (await client.get(f"/v1/workflows/{mine['id']}/jobs", headers=key)).json()["items"]
    assert [(j["ref"], j["queue"]) for j in jobs] == [("a", "q"), ("b", "q")]
    for hidden in (mixed["id"], elsewhere["id"]):
        for method, suffix, body in (("GET", "", None), ("GET", "/jobs", None),
                                     ("POST", "/jobs", {"jobs": [job("new", queue="q")]}),
                                     ("POST", "/cancel", None), ("POST", "/retry", None)):
            shown = await client.request(method, f"/v1/workflows/{hidden}{suffix}", json=body, headers=key)
            absent = await client.request(method, f"/v1/workflows/{MISSING}{suffix}", json=body, headers=key)
            assert problem_fields(shown, 404) == []
            assert shown.json() == {**absent.json(), "detail": absent.json()["detail"].replace(MISSING, hidden)}
            assert "'r'" not in shown.text and hidden in shown.text
    # Nothing of the hidden workflows changed.
    assert (await client.get(f"/v1/workflows/{mixed['id']}")).json()["jobs"] == 2
    assert (await client.get(f"/v1/workflows/{mixed['id']}")).json()["state"] == "RUNNING"
    # What the key may act on, it does.
    cancelled = await client.post(f"/v1/workflows/{mine['id']}/cancel", headers=key)
    assert cancelled.status_code == 200 and cancelled.json()["state"] == "CANCELLED"
    await assert_consistent(db)


# --- adding jobs -----------------------------------------------------------------------------

async def test_jobs_added_to_a_running_workflow_wait_for_running_parents(client: httpx.AsyncClient,
                                                                        db: Database) -> None:
    made = await create(client, [job("a"), job("b", "a")], name="grows", metadata={"k": 1})
    response = await client.post(f"/v1/workflows/{made['id']}/jobs", json={"jobs": [
        job("c", "b"), job("d", "a", "c"), job("e")]})
    assert response.status_code == 201, response.text
    added = response.json()
    assert [(i["ref"], i["state"]) for i in added["items"]] == [("c", "WAITING"), ("d", "WAITING"), ("e", "ENQUEUED")]
    workflow = added["workflow"]
    assert (workflow["id"], workflow["name"], workflow["metadata"], workflow["state"], workflow["jobs"]) == \
        (made["id"], "grows", {"k": 1}, "RUNNING", 5)
    assert workflow["counts"] == {"ENQUEUED": 2, "WAITING": 3}
    assert (await client.get(f"/v1/workflows/{made['id']}")).json()["counts"] == workflow["counts"]
    page = (await client.get(f"/v1/workflows/{made['id']}/jobs")).json()["items"]
    assert [(j["ref"], j["depends_on"]) for j in page] == [
        ("a", []), ("b", ["a"]), ("c", ["b"]), ("d", ["a", "c"]), ("e", [])]
    d = await execution(client, added["items"][1]["execution_id"])
    assert d["workflow"] == {"id": made["id"], "ref": "d"} and d["state"] == "WAITING"
    blockers = (await client.get(f"/v1/executions/{d['id']}/blockers")).json()
    assert blockers == {"state": "WAITING", "items": [{"reason": "dependencies", "refs": ["a", "c"]}]}

    # Refused additions add nothing.
    for jobs, fields in (([job("a")], ["jobs[0].ref"]), ([job("f", "zz")], ["jobs[0].depends_on[0]"]),
                         ([job("f", "a"), job("g", "f", "g")], ["jobs[1].depends_on[1]"]),
                         ([job("f", "g"), job("g", "f")], ["jobs[0].depends_on[0]"]),
                         ([job("f", "a", debounce=DEBOUNCE)], ["jobs[0].debounce"]),
                         ([job("f", "a"), job("g", "f", handler="unregistered")], ["jobs[1].handler"])):
        refused = await client.post(f"/v1/workflows/{made['id']}/jobs", json={"jobs": jobs})
        assert problem_fields(refused, 422) == fields, jobs
    assert (await client.get(f"/v1/workflows/{made['id']}")).json()["jobs"] == 5
    assert set(await states(client, made["id"])) == {"a", "b", "c", "d", "e"}
    await assert_consistent(db)


async def test_a_job_added_after_its_parent_succeeded_is_enqueued_at_once(client: httpx.AsyncClient,
                                                                          db: Database) -> None:
    made = await create(client, [job("a"), job("keep")])  # `keep` keeps the workflow RUNNING
    ids = ids_of(made)
    await end(db, ids["a"], "SUCCEEDED")
    response = await client.post(f"/v1/workflows/{made['id']}/jobs", json={"jobs": [
        job("b", "a", run_at=None), job("c", "a", "keep"), job("d", "b")]})
    assert response.status_code == 201, response.text
    assert [(i["ref"], i["state"]) for i in response.json()["items"]] == [
        ("b", "ENQUEUED"), ("c", "WAITING"), ("d", "WAITING")]
    b = await execution(client, response.json()["items"][0]["execution_id"])
    assert b["state"] == "ENQUEUED" and b["error_type"] is None
    assert response.json()["workflow"]["counts"] == {"SUCCEEDED": 1, "ENQUEUED": 2, "WAITING": 2}
    await assert_consistent(db)


@pytest.mark.parametrize("failed", ["CANCELLED", "DEAD_LETTER"])
async def test_a_job_added_after_its_parent_failed_is_cancelled_at_once_unless_it_runs_anyway(
        client: httpx.AsyncClient, db: Database, failed: str) -> None:
    made = await create(client, [job("a"), job("keep")])
    ids = ids_of(made)
    if failed == "CANCELLED":
        assert (await client.post(f"/v1/executions/{ids['a']}/cancel")).status_code == 200
    else:
        await end(db, ids["a"], failed)
    response = await client.post(f"/v1/workflows/{made['id']}/jobs", json={"jobs": [
        job("b", "a"), job("c", "b"), job("d", "a", on_dependency_failure="run"),
        job("e", "a", "keep", on_dependency_failure="run"), job("f", "keep")]})
    assert response.status_code == 201, response.text
    items = response.json()["items"]
    assert [(i["ref"], i["state"]) for i in items] == [
        ("b", "CANCELLED"), ("c", "CANCELLED"), ("d", "ENQUEUED"), ("e", "WAITING"), ("f", "WAITING")]
    b, c = (await execution(client, items[0]["execution_id"])), (await execution(client, items[1]["execution_id"]))
    assert b["error_type"] == c["error_type"] == "dependency_failed"
    assert f"dependency a (execution {ids['a']}) ended {failed}" in b["last_error"]
    assert f"dependency b (execution {b['id']}) ended CANCELLED" in c["last_error"]
    workflow = response.json()["workflow"]
    assert workflow["state"] == "RUNNING"
    if failed == "CANCELLED":
        assert workflow["counts"] == {"CANCELLED": 3, "ENQUEUED": 2, "WAITING": 2}
    else:
        assert workflow["counts"] == {"DEAD_LETTER": 1, "CANCELLED": 2, "ENQUEUED": 2, "WAITING": 2}
    await assert_consistent(db)
    # Once `keep` succeeded, e (run) and f are enqueued; the workflow ends CANCELLED after the user's
    # cancel of a, FAILED after a dead letter.
    await end(db, ids["keep"], "SUCCEEDED")
    assert [(await execution(client, i["execution_id"]))["state"] for i in items[3:]] == ["ENQUEUED", "ENQUEUED"]
    for item in items[2:]:
        await end(db, item["execution_id"], "SUCCEEDED")
    done = (await client.get(f"/v1/workflows/{made['id']}")).json()
    assert done["state"] == ("CANCELLED" if failed == "CANCELLED" else "FAILED")
    assert done["completed_at"] is not None
    await assert_consistent(db)


async def test_jobs_are_not_added_to_a_finished_or_unknown_workflow(client: httpx.AsyncClient,
                                                                    db: Database) -> None:
    made = await create(client, [job("a")])
    for finished in ("cancel", "succeed"):
        if finished == "cancel":
            assert (await client.post(f"/v1/workflows/{made['id']}/cancel")).json()["state"] == "CANCELLED"
        else:
            made = await create(client, [job("a")])
            await end(db, ids_of(made)["a"], "SUCCEEDED")
            assert (await client.get(f"/v1/workflows/{made['id']}")).json()["state"] == "SUCCEEDED"
        refused = await client.post(f"/v1/workflows/{made['id']}/jobs", json={"jobs": [job("b", "a")]})
        assert problem_fields(refused, 409) == []
        assert (await client.get(f"/v1/workflows/{made['id']}")).json()["jobs"] == 1
    unknown = await client.post(f"/v1/workflows/{MISSING}/jobs", json={"jobs": [job("b")]})
    assert problem_fields(unknown, 404) == [] and MISSING in unknown.json()["detail"]
    assert problem_fields(await client.post("/v1/workflows/not-an-id/jobs", json={"jobs": [job("b")]}), 422)
    assert await scalar(db, "SELECT count(*) FROM job_executions") == 2
    await assert_consistent(db)


async def test_a_workflow_holds_at_most_10000_jobs(client: httpx.AsyncClient, db: Database) -> None:
    made = await create(client, [job(f"w0-{i:04d}") for i in range(1000)])
    for call in range(1, 10):
        response = await client.post(f"/v1/workflows/{made['id']}/jobs",
                                     json={"jobs": [job(f"w{call}-{i:04d}") for i in range(1000)]})
        assert response.status_code == 201, response.text
    assert response.json()["workflow"]["jobs"] == 10_000
    refused = await client.post(f"/v1/workflows/{made['id']}/jobs", json={"jobs": [job("one-more", "w0-0000")]})
    assert problem_fields(refused, 422) == ["jobs"]
    assert await scalar(db, "SELECT count(*) FROM job_executions") == 10_000
    assert (await client.get(f"/v1/workflows/{made['id']}")).json()["counts"] == {"ENQUEUED": 10_000}
    await assert_consistent(db)


# --- listings ------------------------------------------------------------------------------

async def test_workflows_are_listed_newest_first_by_state_and_name_page_by_page(client: httpx.AsyncClient) -> None:
    made = [await create(client, [job("a")], name=name) for name in ("alpha", "beta", "alpha", "gamma", "alpha")]
    ids = [m["id"] for m in made]
    assert (await client.post(f"/v1/workflows/{ids[2]}/cancel")).status_code == 200
    assert (await client.post(f"/v1/workflows/{ids[3]}/cancel")).status_code == 200

    async def listed(**params: Any) -> list[str]:
        response = await client.get("/v1/workflows", params=params)
        assert response.status_code == 200, response.text
        return [w["id"] for w in response.json()["items"]]

    assert await listed() == ids[::-1]
    assert await listed(name="alpha") == [ids[4], ids[2], ids[0]]
    assert await listed(state="CANCELLED") == [ids[3], ids[2]]
    assert await listed(state="RUNNING", name="alpha") == [ids[4], ids[0]]
    assert await listed(state="SUCCEEDED") == []
    assert await listed(name="nobody") == []
    first = (await client.get("/v1/workflows", params={"name": "alpha"})).json()["items"][0]
    assert (first["name"], first["state"], first["counts"], first["jobs"]) == ("alpha", "RUNNING", {"ENQUEUED": 1}, 1)

    for params, expected in (({}, ids[::-1]), ({"name": "alpha"}, [ids[4], ids[2], ids[0]]),
                             ({"state": "RUNNING"}, [ids[4], ids[1], ids[0]])):
        seen, cursor, pages = [], None, 0
        while True:
            page = (await client.get("/v1/workflows", params={**params, "limit": 2,
                                                              **({"cursor": cursor} if cursor else {})})).json()
            seen += [w["id"] for w in page["items"]]
            pages += 1
            cursor = page["next_cursor"]
            if cursor is None:
                break
        assert seen == expected, params
        assert pages == (len(expected) + 1) // 2
    for bad in ({"state": "WAITING"}, {"limit": 0}, {"limit": 1001}, {"cursor": "nonsense"}):
        assert problem_fields(await client.get("/v1/workflows", params=bad), 422), bad


async def test_a_workflows_jobs_are_listed_by_ref_page_by_page_with_their_parents(client: httpx.AsyncClient,
                                                                                 db: Database) -> None:
    jobs = [job("m"), job("k", "m"), job("z", "k", "m"), job("b"), job("a", "b", "z", "m")] + \
           [job(f"n{i}", "b") for i in range(5)]
    made = await create(client, jobs)
    ids = ids_of(made)
    everything = (await client.get(f"/v1/workflows/{made['id']}/jobs")).json()
    assert everything["next_cursor"] is None
    assert [(j["ref"], j["state"], j["queue"], j["depends_on"]) for j in everything["items"]] == [
        ("a", "WAITING", "default", ["b", "m", "z"]), ("b", "ENQUEUED", "default", []),
        ("k", "WAITING", "default", ["m"]), ("m", "ENQUEUED", "default", []),
        *[(f"n{i}", "WAITING", "default", ["b"]) for i in range(5)], ("z", "WAITING", "default", ["k", "m"])]
    assert all(j["execution_id"] == ids[j["ref"]] for j in everything["items"])

    async def walk(**params: Any) -> list[str]:
        seen, cursor = [], None
        while True:
            page = (await client.get(f"/v1/workflows/{made['id']}/jobs",
                                     params={**params, "limit": 3, **({"cursor": cursor} if cursor else {})})).json()
            assert len(page["items"]) <= 3
            seen += [j["ref"] for j in page["items"]]
            cursor = page["next_cursor"]
            if cursor is None:
                return seen

    assert await walk() == [j["ref"] for j in everything["items"]]
    assert await walk(state="WAITING") == ["a", "k", "n0", "n1", "n2", "n3", "n4", "z"]
    assert await walk(state="ENQUEUED") == ["b", "m"]
    assert (await client.post(f"/v1/executions/{ids['b']}/cancel")).status_code == 200
    assert await walk(state="CANCELLED") == ["a", "b", "n0", "n1", "n2", "n3", "n4"]
    assert await walk(state="WAITING") == ["k", "z"]
    assert await walk(state="SUCCEEDED") == []
    await assert_consistent(db)
    for bad in ({"state": "NOPE"}, {"limit": 0}, {"cursor": "nonsense"}):
        assert problem_fields(await client.get(f"/v1/workflows/{made['id']}/jobs", params=bad), 422), bad
    assert problem_fields(await client.get(f"/v1/workflows/{MISSING}/jobs"), 404) == []
    assert problem_fields(await client.get(f"/v1/workflows/{MISSING}"), 404) == []


# --- cancels and retries -------------------------------------------------------------------

async def test_cancelling_a_waiting_execution_cascades_to_its_cancel_children(client: httpx.AsyncClient,
                                                                              db: Database) -> None:
    made = await create(client, [job("a"), job("b", "a"), job("c", "b"), job("d", "c"),
                                 job("report", "b", on_dependency_failure="run"), job("other", "a")])
    ids = ids_of(made)
    b = await execution(client, ids["b"])
    assert b["state"] == "WAITING" and b["workflow"] == {"id": made["id"], "ref": "b"}

    # A WAITING execution is not deleted, as an ENQUEUED one is not.
    deleting_waiting = await client.delete(f"/v1/executions/{ids['b']}")
    deleting_enqueued = await client.delete(f"/v1/executions/{ids['a']}")
    assert deleting_waiting.status_code == deleting_enqueued.status_code == 409, deleting_waiting.text
    assert deleting_waiting.headers["content-type"] == PROBLEM

    cancelled = await client.post(f"/v1/executions/{ids['b']}/cancel")
    assert cancelled.status_code == 200, cancelled.text
    assert cancelled.json()["state"] == "CANCELLED" and cancelled.json()["error_type"] is None
    assert await states(client, made["id"]) == {"a": "ENQUEUED", "b": "CANCELLED", "c": "CANCELLED",
                                                "d": "CANCELLED", "report": "ENQUEUED", "other": "WAITING"}
    for ref, parent in (("c", "b"), ("d", "c")):
        shown = await execution(client, ids[ref])
        assert shown["error_type"] == "dependency_failed"
        assert shown["last_error"] == f"dependency {parent} (execution {ids[parent]}) ended CANCELLED"
    workflow = (await client.get(f"/v1/workflows/{made['id']}")).json()
    assert workflow["state"] == "RUNNING" and workflow["counts"] == {"ENQUEUED": 2, "CANCELLED": 3, "WAITING": 1}
    events = (await client.get(f"/v1/executions/{ids['d']}/events")).json()["items"]
    assert [e["data"]["new_state"] for e in events][-1] == "CANCELLED"
    # Cancelled again: 409, nothing changes.
    assert problem_fields(await client.post(f"/v1/executions/{ids['c']}/cancel"), 409) == []
    await assert_consistent(db)

    # The rest ends by the user's cancel: the workflow is CANCELLED.
    assert (await client.post(f"/v1/executions/{ids['a']}/cancel")).status_code == 200
    assert (await states(client, made["id"]))["other"] == "CANCELLED"
    assert (await client.get(f"/v1/workflows/{made['id']}")).json()["state"] == "RUNNING"  # report is ENQUEUED
    assert (await client.post(f"/v1/executions/{ids['report']}/cancel")).status_code == 200
    done = (await client.get(f"/v1/workflows/{made['id']}")).json()
    assert done["state"] == "CANCELLED" and done["completed_at"] is not None
    assert done["counts"] == {"CANCELLED": 6}
    await assert_consistent(db)


async def test_cancel_and_retry_of_a_workflow(client: httpx.AsyncClient, db: Database) -> None:
    made = await create(client, [job("a"), job("b", "a"), job("c", "b"), job("keep"),
                                 job("report", "c", on_dependency_failure="run")])
    ids = ids_of(made)
    # Nothing to retry in a workflow whose jobs are all ENQUEUED or WAITING.
    assert problem_fields(await client.post(f"/v1/workflows/{made['id']}/retry"), 409) == []
    await end(db, ids["a"], "DEAD_LETTER")
    assert await states(client, made["id"]) == {"a": "DEAD_LETTER", "b": "CANCELLED", "c": "CANCELLED",
                                                "keep": "ENQUEUED", "report": "ENQUEUED"}
    await end(db, ids["keep"], "SUCCEEDED")
    await end(db, ids["report"], "SUCCEEDED")
    failed = (await client.get(f"/v1/workflows/{made['id']}")).json()
    assert failed["state"] == "FAILED" and failed["completed_at"] is not None
    assert failed["counts"] == {"DEAD_LETTER": 1, "CANCELLED": 2, "SUCCEEDED": 2}
    await assert_consistent(db)
    assert problem_fields(await client.post(f"/v1/workflows/{made['id']}/cancel"), 409) == []

    retried = await client.post(f"/v1/workflows/{made['id']}/retry")
    assert retried.status_code == 200, retried.text
    body = retried.json()
    assert (body["state"], body["retried"], body["waiting_again"], body["completed_at"]) == ("RUNNING", 1, 2, None)
    assert body["counts"] == {"ENQUEUED": 1, "WAITING": 2, "SUCCEEDED": 2}
    assert await states(client, made["id"]) == {"a": "ENQUEUED", "b": "WAITING", "c": "WAITING",
                                                "keep": "SUCCEEDED", "report": "SUCCEEDED"}
    assert (await execution(client, ids["a"]))["attempt"] == 1
    await assert_consistent(db)
    assert problem_fields(await client.post(f"/v1/workflows/{made['id']}/retry"), 409) == []

    # The cancel of the running workflow: every unfinished job, and it ends CANCELLED; 409 again.
    cancelled = await client.post(f"/v1/workflows/{made['id']}/cancel")
    assert cancelled.status_code == 200, cancelled.text
    assert cancelled.json()["state"] == "CANCELLED"
    assert cancelled.json()["counts"] == {"CANCELLED": 3, "SUCCEEDED": 2}
    await assert_consistent(db)
    assert problem_fields(await client.post(f"/v1/workflows/{made['id']}/cancel"), 409) == []
    # Cancelled by a user, not by a failed dependency: nothing to retry.
    assert problem_fields(await client.post(f"/v1/workflows/{made['id']}/retry"), 409) == []
    for missing in ("cancel", "retry"):
        assert problem_fields(await client.post(f"/v1/workflows/{MISSING}/{missing}"), 404) == []


async def test_scopes_of_the_workflow_routes(client: httpx.AsyncClient) -> None:
    made = await create(client, [job("a")])
    keys = {s: await new_key(client, [s], ["default"]) for s in ("read", "enqueue", "operate")}
    assert (await client.post("/v1/workflows", json={"jobs": [job("a")]}, headers=keys["enqueue"])).status_code == 201
    assert (await client.post(f"/v1/workflows/{made['id']}/jobs", json={"jobs": [job("b")]},
                              headers=keys["enqueue"])).status_code == 201
    for held, method, path in (("read", "POST", "/v1/workflows"), ("operate", "POST", "/v1/workflows"),
                               ("read", "POST", f"/v1/workflows/{made['id']}/jobs"),
                               ("enqueue", "GET", "/v1/workflows"), ("enqueue", "GET", f"/v1/workflows/{made['id']}"),
                               ("enqueue", "POST", f"/v1/workflows/{made['id']}/cancel"),
                               ("read", "POST", f"/v1/workflows/{made['id']}/retry")):
        response = await client.request(method, path, json={"jobs": [job("x")]} if method == "POST" else None,
                                        headers=keys[held])
        assert problem_fields(response, 403) == [], (held, method, path)
    assert (await client.get(f"/v1/workflows/{made['id']}/jobs", headers=keys["read"])).status_code == 200
    assert (await client.post(f"/v1/workflows/{made['id']}/cancel", headers=keys["operate"])).status_code == 200




# --- defects these tests found (fixed since): what the server must keep doing ------------------

@pytest.mark.parametrize("how", ["retry", "bulk-retry"])
async def test_a_manual_retry_of_a_cancelled_job_does_not_run_it_before_its_parents(
        client: httpx.AsyncClient, db: Database, how: str) -> None:
    """A WAITING job a user cancelled, retried by POST /v1/executions/{id}/retry (or bulk-retry)
    while its parent is still ENQUEUED: it must wait for that parent again (WAITING), or the retry
    be refused. (Found: the server enqueued it at once, due now, pending_parents left at 1, so it
    would have run before its parent.)"""
    made = await create(client, [job("a"), job("b", "a"), job("c", "b")])
    ids = ids_of(made)
    assert (await client.post(f"/v1/executions/{ids['b']}/cancel")).status_code == 200
    if how == "retry":
        retried = await client.post(f"/v1/executions/{ids['b']}/retry")
    else:
        retried = await client.post("/v1/executions/bulk-retry", json={"ids": [ids["b"]]})
    b = await execution(client, ids["b"])
    a = await execution(client, ids["a"])
    assert a["state"] == "ENQUEUED"
    assert b["state"] == "WAITING" or retried.status_code == 409, (
        f"{how} of workflow job b (parent a still {a['state']}) answered {retried.status_code} and left b "
        f"{b['state']} (due {b['scheduled_at']}): a job of a workflow runs before its parents end")
    await assert_consistent(db)


async def test_a_workflow_retry_with_nothing_to_retry_is_409_and_ends_the_workflow_once(
        client: httpx.AsyncClient, db: Database) -> None:
    """[a, b→a]: the user cancels a, b is cancelled by the failed dependency, the workflow ends
    CANCELLED. Nothing can run again (a was cancelled by a user, not dead-lettered), so POST
    /v1/workflows/{id}/retry is 409 and changes nothing. (Found: 200 with waiting_again 1, b
    waiting again and cancelled again by a at once, and a second workflow.cancelled event.)"""
    made = await create(client, [job("a"), job("b", "a")])
    ids = ids_of(made)
    assert (await client.post(f"/v1/executions/{ids['a']}/cancel")).status_code == 200
    assert (await client.get(f"/v1/workflows/{made['id']}")).json()["state"] == "CANCELLED"
    retried = await client.post(f"/v1/workflows/{made['id']}/retry")
    ends = await scalar(db, "SELECT count(*) FROM job_events WHERE type = 'workflow.cancelled'")
    assert await states(client, made["id"]) == {"a": "CANCELLED", "b": "CANCELLED"}
    assert (retried.status_code, ends) == (409, 1), (
        f"a retry that can retry nothing answered {retried.status_code} {retried.text} and the workflow "
        f"ended {ends} times (workflow.cancelled events)")


async def test_deleting_a_finished_job_of_a_workflow_keeps_its_counts_true(client: httpx.AsyncClient,
                                                                          db: Database) -> None:
    """DELETE /v1/executions/{id} of a cancelled job of a workflow: the workflow's `jobs` and
    `counts` are its jobs as they are. (Found: they stayed as they were, jobs 3 and CANCELLED 1,
    while GET /v1/workflows/{id}/jobs listed 2 jobs, none cancelled.)"""
    made = await create(client, [job("a"), job("b", "a"), job("gone")])
    ids = ids_of(made)
    assert (await client.post(f"/v1/executions/{ids['gone']}/cancel")).status_code == 200
    assert (await client.delete(f"/v1/executions/{ids['gone']}")).status_code == 204
    workflow = (await client.get(f"/v1/workflows/{made['id']}")).json()
    listed = (await client.get(f"/v1/workflows/{made['id']}/jobs")).json()["items"]
    assert [j["ref"] for j in listed] == ["a", "b"]
    assert (workflow["jobs"], workflow["counts"]) == (2, {"ENQUEUED": 1, "WAITING": 1}), (
        f"after DELETE of its cancelled job the workflow says jobs {workflow['jobs']}, counts "
        f"{workflow['counts']}; it has 2 jobs: a ENQUEUED, b WAITING")


async def test_deleting_jobs_of_a_workflow_deletes_their_edges(client: httpx.AsyncClient, db: Database) -> None:
    """job_dependencies has no foreign keys: the deletions trigger deletes a deleted job's edges,
    as a parent (its child still there) and as a child, and no edge names a job that is gone."""
    made = await create(client, [job("a"), job("b", "a"), job("c", "b"), job("d")])
    ids = ids_of(made)
    assert (await client.post(f"/v1/executions/{ids['a']}/cancel")).status_code == 200
    assert await states(client, made["id"]) == {"a": "CANCELLED", "b": "CANCELLED", "c": "CANCELLED",
                                                "d": "ENQUEUED"}
    dangling = ("SELECT count(*) FROM job_dependencies d WHERE NOT EXISTS (SELECT 1 FROM job_executions e"
                " WHERE e.id = d.parent_id) OR NOT EXISTS (SELECT 1 FROM job_executions e WHERE e.id = d.child_id)")
    assert (await client.delete(f"/v1/executions/{ids['b']}")).status_code == 204
    assert (await scalar(db, "SELECT count(*) FROM job_dependencies"), await scalar(db, dangling)) == (0, 0)
    assert (await client.delete(f"/v1/executions/{ids['a']}")).status_code == 204
    assert await scalar(db, dangling) == 0
