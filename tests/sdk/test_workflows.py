"""`client.workflows`, the SDK's side of /v1/workflows, against a real node (API and dispatcher)
with both clients: a diamond made at once, read, listed, its jobs paged by ref and followed to
its end; the workflow an execution belongs to; an idempotent repeat; a refused graph; jobs added
while it runs, then a cancel; a failure retried from where it stopped; its end in the event feed."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from aiohttp import web

from jobwire import (
    AddedJobs,
    Event,
    Page,
    ProblemError,
    TransitionEvent,
    Workflow,
    WorkflowEvent,
    WorkflowItem,
    WorkflowJob,
    WorkflowRef,
)
from tests.sdk.conftest import Live

LATER = "2999-01-01T00:00:00Z"


def job(ref: str, *parents: str, handler: str = "echo", **extra: Any) -> dict[str, Any]:
    return {"ref": ref, "handler": handler, "payload": {"ref": ref}, "depends_on": list(parents), **extra}


def refs(items: list[WorkflowItem] | list[WorkflowJob]) -> list[tuple[str, str]]:
    return [(item.ref, item.state) for item in items]


async def test_a_diamond_is_made_read_listed_paged_and_followed_to_its_end(live: Live, client: Any) -> None:
    made = await client.workflows.create([job("d", "b", "c"), job("b", "a"), job("c", "a"), job("a")],
                                         name="diamond", metadata={"team": "ops"})
    assert isinstance(made, Workflow) and (made.state, made.jobs, made.name) == ("RUNNING", 4, "diamond")
    assert made.metadata == {"team": "ops"} and made.created_at.tzinfo is not None and not made.is_finished
    assert all(isinstance(item, WorkflowItem) for item in made.items)
    assert refs(made.items) == [("d", "WAITING"), ("b", "WAITING"), ("c", "WAITING"), ("a", "ENQUEUED")]
    assert (made.waiting_again, made.retried) == (None, None)  # the retry's answer only
    ids = {item.ref: item.execution_id for item in made.items}

    done = await client.workflows.wait(made.id, timeout=20)
    assert (done.id, done.state, done.counts, done.is_finished) == (made.id, "SUCCEEDED", {"SUCCEEDED": 4}, True)
    assert done.completed_at is not None and done.completed_at.tzinfo is not None
    assert done.items == []  # the create's answer only
    read = await client.workflows.get(made.id)
    assert (read.state, read.counts, read.name) == ("SUCCEEDED", {"SUCCEEDED": 4}, "diamond")

    jobs = await client.workflows.jobs(made.id)
    assert all(isinstance(j, WorkflowJob) for j in jobs)
    assert [(j.ref, j.depends_on, j.state, j.queue) for j in jobs] == [
        ("a", [], "SUCCEEDED", "default"), ("b", ["a"], "SUCCEEDED", "default"),
        ("c", ["a"], "SUCCEEDED", "default"), ("d", ["b", "c"], "SUCCEEDED", "default")]
    assert {j.ref: j.execution_id for j in jobs} == ids
    assert [j.ref for j in await client.workflows.jobs(made.id, limit=1)] == ["a", "b", "c", "d"]  # page by page
    first = await client.workflows.jobs_page(made.id, limit=3)
    assert isinstance(first, Page) and [j.ref for j in first.items] == ["a", "b", "c"] and first.next_cursor
    rest = await client.workflows.jobs_page(made.id, first.next_cursor, limit=3)
    assert [j.ref for j in rest.items] == ["d"] and rest.next_cursor is None
    assert await client.workflows.jobs(made.id, state="DEAD_LETTER") == []

    execution = await client.executions.get(ids["d"])
    assert execution.workflow == WorkflowRef(id=made.id, ref="d") and execution.result == {"ref": "d"}
    assert (await client.workflows.get(execution.workflow.id)).id == made.id
    dispatched = [body for body in live.handler.received if body["execution_id"] == ids["d"]]
    assert dispatched[0]["workflow"]["parents"]["b"]["result"] == {"ref": "b"}
    plain = await client.jobs.enqueue("echo", {"alone": True})
    assert (await client.executions.get(plain.id)).workflow is None


async def test_workflows_are_listed_newest_first_by_state_and_name_page_by_page(live: Live, client: Any) -> None:
    ids = [(await client.workflows.create([job("a", run_at=LATER)], name=name)).id
           for name in ("nightly", "nightly", "weekly")]
    cancelled = await client.workflows.cancel(ids[0])
    assert (cancelled.state, cancelled.counts) == ("CANCELLED", {"CANCELLED": 1})

    assert [w.id for w in await client.workflows.list()] == ids[::-1]
    assert [w.id for w in await client.workflows.list(limit=1)] == ids[::-1]  # every page followed
    assert [w.id for w in await client.workflows.list(name="nightly")] == ids[1::-1]
    assert [w.id for w in await client.workflows.list(state="RUNNING")] == ids[:0:-1]
    assert [w.id for w in await client.workflows.list(state="CANCELLED", name="nightly")] == [ids[0]]
    first = await client.workflows.page(limit=2)
    assert isinstance(first, Page) and [w.id for w in first.items] == [ids[2], ids[1]] and first.next_cursor
    last = await client.workflows.page(first.next_cursor, limit=2)
    assert [w.id for w in last.items] == [ids[0]] and last.next_cursor is None
    assert [w.counts for w in last.items] == [{"CANCELLED": 1}]
    with pytest.raises(ProblemError) as refused:
        await client.workflows.list(state="LOST")
    assert refused.value.status == 422


async def test_a_repeated_idempotency_key_answers_the_first_workflow_and_another_body_is_refused(
        live: Live, client: Any) -> None:
    jobs = [job("a", run_at=LATER), job("b", "a")]
    first = await client.workflows.create(jobs, idempotency_key="nightly-2026-12-03")
    again = await client.workflows.create(jobs, idempotency_key="nightly-2026-12-03")
    assert again.id == first.id and [i.execution_id for i in again.items] == [i.execution_id for i in first.items]
    assert [w.id for w in await client.workflows.list()] == [first.id]
    with pytest.raises(ProblemError) as refused:
        await client.workflows.create([job("a")], idempotency_key="nightly-2026-12-03")
    assert refused.value.status == 422 and refused.value.fields == ["idempotency_key"]
    other = await client.workflows.create(jobs)  # without a key, the client makes its own: a new workflow
    assert other.id != first.id


async def test_a_graph_with_a_cycle_or_an_unknown_ref_is_refused_naming_the_field(live: Live, client: Any) -> None:
    with pytest.raises(ProblemError) as cycle:
        await client.workflows.create([job("a", "b"), job("b", "a")])
    assert cycle.value.status == 422 and cycle.value.fields[0].startswith("jobs[")
    assert "cycle" in str(cycle.value)
    with pytest.raises(ProblemError) as unknown:
        await client.workflows.create([job("a", "nowhere")])
    assert unknown.value.status == 422 and unknown.value.fields == ["jobs[0].depends_on[0]"]
    with pytest.raises(ProblemError) as debounced:
        await client.workflows.create([{**job("a"), "debounce": {"key": "k", "delay_seconds": 5}}])
    assert debounced.value.status == 422 and debounced.value.fields == ["jobs[0].debounce"]
    assert await client.workflows.list() == []  # all or none


async def test_jobs_added_to_a_running_workflow_wait_for_its_refs_then_a_cancel_ends_it(
        live: Live, client: Any) -> None:
    made = await client.workflows.create([job("fetch", run_at=LATER)])
    added = await client.workflows.add_jobs(made.id, [job("resize", "fetch"), job("report", "resize", "fetch")])
    assert isinstance(added, AddedJobs) and isinstance(added.workflow, Workflow)
    assert (added.workflow.id, added.workflow.jobs, added.workflow.counts) == (made.id, 3,
                                                                                {"ENQUEUED": 1, "WAITING": 2})
    assert refs(added.items) == [("resize", "WAITING"), ("report", "WAITING")]
    waiting = await client.executions.list(state="WAITING")
    assert {e.id for e in waiting} == {i.execution_id for i in added.items}
    held = await client.executions.blockers(added.items[0].execution_id)
    assert held.state == "WAITING" and [(b.reason, b.refs) for b in held.items] == [("dependencies", ["fetch"])]
    assert [j.ref for j in await client.workflows.jobs(made.id, state="WAITING")] == ["report", "resize"]
    with pytest.raises(ProblemError) as again:
        await client.workflows.add_jobs(made.id, [job("resize", "fetch")])
    assert again.value.status == 422 and again.value.fields == ["jobs[0].ref"]

    cancelled = await client.workflows.cancel(made.id)
    assert (cancelled.state, cancelled.counts) == ("CANCELLED", {"CANCELLED": 3})
    assert cancelled.completed_at is not None and cancelled.is_finished
    assert {j.state for j in await client.workflows.jobs(made.id)} == {"CANCELLED"}
    with pytest.raises(ProblemError) as finished:
        await client.workflows.cancel(made.id)
    assert finished.value.status == 409
    with pytest.raises(ProblemError) as closed:
        await client.workflows.add_jobs(made.id, [job("late")])
    assert closed.value.status == 409
    with pytest.raises(ProblemError) as missing:
        await client.workflows.get("00000000-0000-0000-0000-000000000000")
    assert missing.value.status == 404


async def test_a_failed_workflow_is_retried_from_where_it_stopped(live: Live, client: Any) -> None:
    fixed = {"yet": False}

    async def flaky(_: web.Request, body: dict[str, Any]) -> web.StreamResponse:
        if fixed["yet"]:
            return web.json_response({"result": "fixed"})
        return web.json_response({"error": {"type": "boom", "message": "no"}, "retryable": False}, status=500)

    await client.handlers.put("flaky", live.handler.route("/flaky", flaky))
    made = await client.workflows.create([job("a"), job("b", handler="flaky", max_attempts=1), job("c", "a", "b"),
                                          job("report", "c", on_dependency_failure="run")])
    failed = await client.workflows.wait(made.id, timeout=20)
    assert failed.state == "FAILED"
    assert failed.counts == {"SUCCEEDED": 2, "DEAD_LETTER": 1, "CANCELLED": 1}  # report ran with c CANCELLED
    with pytest.raises(ProblemError) as closed:
        await client.workflows.cancel(made.id)
    assert closed.value.status == 409

    fixed["yet"] = True
    retried = await client.workflows.retry(made.id)
    assert isinstance(retried, Workflow) and (retried.state, retried.retried, retried.waiting_again) == (
        "RUNNING", 1, 1)
    done = await client.workflows.wait(made.id, timeout=20)
    assert (done.state, done.counts) == ("SUCCEEDED", {"SUCCEEDED": 4})
    ran = [body["payload"]["ref"] for body in live.handler.received]
    assert ran.count("a") == 1 and ran.count("report") == 1 and ran.count("c") == 1  # succeeded jobs never again
    with pytest.raises(ProblemError) as nothing:
        await client.workflows.retry(made.id)
    assert nothing.value.status == 409


async def test_a_workflows_end_is_an_event_of_the_feed(live: Live, client: Any) -> None:
    made = await client.workflows.create([job("a")], name="announced", metadata={"team": "ops"})
    await client.workflows.wait(made.id, timeout=20)
    ended: list[Event] = []
    for _ in range(100):
        ended = await client.events.list(types=["workflow.succeeded"])
        if ended:
            break
        await asyncio.sleep(0.1)
    [event] = ended
    assert event.type == "workflow.succeeded" and isinstance(event.data, WorkflowEvent)
    assert (event.data.workflow_id, event.data.name, event.data.state) == (made.id, "announced", "SUCCEEDED")
    assert (event.data.counts, event.data.metadata) == ({"SUCCEEDED": 1}, {"team": "ops"})
    assert event.data.completed_at >= event.data.created_at
    everything = await client.events.list()  # both kinds in one feed, each read as its own
    kinds = {(e.type.split(".")[0], type(e.data)) for e in everything}
    assert kinds == {("execution", TransitionEvent), ("workflow", WorkflowEvent)}
