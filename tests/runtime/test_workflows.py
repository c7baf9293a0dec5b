"""Workflows against a real node and a real handler recording every call: the diamond runs A, then
B and C, then D with both results; a failing parent cancels its descendants while a `run` child
still runs with its parents' states; the retry and the cancel of a workflow; its end is an event."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
from aiohttp import web

from tests.conftest import HandlerServer, register, wait_for_state


async def fail(_: web.Request, job: dict[str, Any]) -> web.StreamResponse:
    return web.json_response({"error": {"type": "boom", "message": "no"}, "retryable": False}, status=500)


async def wait_for_workflow(api: httpx.AsyncClient, workflow_id: str, state: str,
                            timeout: float = 15.0) -> dict[str, Any]:
    body: dict[str, Any] = {}
    for _ in range(int(timeout / 0.05)):
        body = (await api.get(f"/v1/workflows/{workflow_id}")).json()
        if body.get("state") == state:
            return body
        await asyncio.sleep(0.05)
    raise AssertionError(f"workflow {workflow_id} stayed {body.get('state')}, expected {state}: {body}")


def job(ref: str, *parents: str, handler: str = "ok", **extra: Any) -> dict[str, Any]:
    return {"ref": ref, "handler": handler, "payload": {"ref": ref}, "depends_on": list(parents), **extra}


async def test_the_diamond_runs_a_then_b_and_c_then_d_with_both_results(api: httpx.AsyncClient,
                                                                       handler: HandlerServer) -> None:
    await register(api, "ok", handler.url + "/ok")
    made = await api.post("/v1/workflows", json={"name": "diamond", "jobs": [
        job("d", "b", "c"), job("b", "a"), job("c", "a"), job("a")]})
    assert made.status_code == 201, made.text
    body = made.json()
    assert [(i["ref"], i["state"]) for i in body["items"]] == [
        ("d", "WAITING"), ("b", "WAITING"), ("c", "WAITING"), ("a", "ENQUEUED")]
    ids = {i["ref"]: i["execution_id"] for i in body["items"]}
    done = await wait_for_workflow(api, body["id"], "SUCCEEDED")
    assert done["counts"] == {"SUCCEEDED": 4} and done["completed_at"] is not None
    order = [r["payload"]["ref"] for r in handler.received]
    assert order[0] == "a" and set(order[1:3]) == {"b", "c"} and order[3] == "d"
    d = handler.received[3]
    assert d["workflow"]["id"] == body["id"] and d["workflow"]["ref"] == "d"
    assert d["workflow"]["parents"] == {
        "b": {"execution_id": ids["b"], "state": "SUCCEEDED", "result": {"ref": "b"}},
        "c": {"execution_id": ids["c"], "state": "SUCCEEDED", "result": {"ref": "c"}}}
    assert handler.received[0]["workflow"]["parents"] == {}
    shown = (await api.get(f"/v1/executions/{ids['d']}")).json()
    assert shown["workflow"] == {"id": body["id"], "ref": "d"}
    jobs = (await api.get(f"/v1/workflows/{body['id']}/jobs")).json()
    assert [(j["ref"], j["depends_on"]) for j in jobs["items"]] == [("a", []), ("b", ["a"]), ("c", ["a"]),
                                                                     ("d", ["b", "c"])]
    feed = (await api.get("/v1/events", params={"types": "workflow.succeeded"})).json()
    for _ in range(50):
        if feed["items"]:
            break
        await asyncio.sleep(0.1)
        feed = (await api.get("/v1/events", params={"types": "workflow.succeeded"})).json()
    [ended] = feed["items"]
    assert ended["data"]["workflow_id"] == body["id"] and ended["data"]["state"] == "SUCCEEDED"


async def test_a_failed_parent_cancels_its_descendants_and_a_run_child_still_runs(
        api: httpx.AsyncClient, handler: HandlerServer) -> None:
    await register(api, "ok", handler.url + "/ok")
    await register(api, "bad", handler.route("/bad", fail))
    made = (await api.post("/v1/workflows", json={"jobs": [
        job("a", handler="bad", max_attempts=1), job("b", "a"), job("c", "b"),
        job("report", "a", "b", "c", on_dependency_failure="run")]})).json()
    ids = {i["ref"]: i["execution_id"] for i in made["items"]}
    done = await wait_for_workflow(api, made["id"], "FAILED")
    assert done["counts"] == {"DEAD_LETTER": 1, "CANCELLED": 2, "SUCCEEDED": 1}
    for ref in ("b", "c"):
        shown = (await api.get(f"/v1/executions/{ids[ref]}")).json()
        assert shown["state"] == "CANCELLED" and shown["error_type"] == "dependency_failed"
    assert "dependency a" in (await api.get(f"/v1/executions/{ids['b']}")).json()["last_error"]
    assert "dependency b" in (await api.get(f"/v1/executions/{ids['c']}")).json()["last_error"]
    [report] = [r for r in handler.received if r["payload"]["ref"] == "report"]
    assert {ref: p["state"] for ref, p in report["workflow"]["parents"].items()} == {
        "a": "DEAD_LETTER", "b": "CANCELLED", "c": "CANCELLED"}
    assert [r["payload"]["ref"] for r in handler.received if r["payload"]["ref"] in ("b", "c")] == []

    # The retry runs the graph on from where it stopped: a again, then b and c; report never again.
    async def fixed(_: web.Request, job: dict[str, Any]) -> web.StreamResponse:
        return web.json_response({"result": "fixed"})

    handler.behaviours["/bad"] = fixed
    retried = await api.post(f"/v1/workflows/{made['id']}/retry")
    assert retried.status_code == 200, retried.text
    assert (retried.json()["retried"], retried.json()["waiting_again"], retried.json()["state"]) == (1, 2, "RUNNING")
    await wait_for_workflow(api, made["id"], "SUCCEEDED")
    assert [r["payload"]["ref"] for r in handler.received].count("report") == 1
    assert (await api.post(f"/v1/workflows/{made['id']}/retry")).status_code == 409


async def test_cancelling_a_workflow_cancels_every_unfinished_job(api: httpx.AsyncClient,
                                                                  handler: HandlerServer) -> None:
    await register(api, "ok", handler.url + "/ok")
    made = (await api.post("/v1/workflows", json={"jobs": [
        job("a", run_at="2999-01-01T00:00:00Z"), job("b", "a")]})).json()
    cancelled = await api.post(f"/v1/workflows/{made['id']}/cancel")
    assert cancelled.status_code == 200, cancelled.text
    assert (cancelled.json()["state"], cancelled.json()["counts"]) == ("CANCELLED", {"CANCELLED": 2})
    assert (await api.post(f"/v1/workflows/{made['id']}/cancel")).status_code == 409
    for item in made["items"]:
        await wait_for_state(api, item["execution_id"], "CANCELLED")


async def test_results_past_256_kib_are_left_out_and_paged_through_the_callback(
        api: httpx.AsyncClient, handler: HandlerServer) -> None:
    async def big(_: web.Request, job: dict[str, Any]) -> web.StreamResponse:
        return web.json_response({"result": "x" * 140_000})

    await register(api, "big", handler.route("/big", big))
    await register(api, "ok", handler.url + "/ok")
    made = (await api.post("/v1/workflows", json={"jobs": [
        job("p1", handler="big"), job("p2", handler="big"), job("child", "p1", "p2")]})).json()
    await wait_for_workflow(api, made["id"], "SUCCEEDED")
    [child] = [r for r in handler.received if r["payload"]["ref"] == "child"]
    assert {ref: sorted(p) for ref, p in child["workflow"]["parents"].items()} == {
        "p1": ["execution_id", "state"], "p2": ["execution_id", "state"]}
    callback = child["callback"]
    headers = {"Authorization": f"Bearer {callback['token']}"}
    async with httpx.AsyncClient(timeout=10) as client:
        first = (await client.get(callback["url"] + "/parents", params={"limit": 1}, headers=headers)).json()
        assert [p["ref"] for p in first["items"]] == ["p1"] and first["items"][0]["result"] == "x" * 140_000
        second = (await client.get(callback["url"] + "/parents", params={"after": first["next_after"]},
                                   headers=headers)).json()
        assert [p["ref"] for p in second["items"]] == ["p2"] and second["next_after"] is None
        refused = await client.get(callback["url"] + "/parents", headers={"Authorization": "Bearer nope"})
        assert refused.status_code in (401, 403)


async def test_a_waiting_job_names_its_unfinished_dependencies_as_blockers(api: httpx.AsyncClient,
                                                                           handler: HandlerServer) -> None:
    await register(api, "ok", handler.url + "/ok")
    made = (await api.post("/v1/workflows", json={"jobs": [
        job("a", run_at="2999-01-01T00:00:00Z"), job("b"), job("c", "a", "b")]})).json()
    ids = {i["ref"]: i["execution_id"] for i in made["items"]}
    await wait_for_state(api, ids["b"], "SUCCEEDED")
    blockers = (await api.get(f"/v1/executions/{ids['c']}/blockers")).json()
    assert blockers == {"state": "WAITING", "items": [{"reason": "dependencies", "refs": ["a"]}]}
