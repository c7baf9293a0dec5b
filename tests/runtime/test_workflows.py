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


# --- children spawned by a running handler ---------------------------------------------------

async def test_a_handler_fans_out_to_children_and_in_again_with_their_results(
        api: httpx.AsyncClient, handler: HandlerServer) -> None:
    """A job outside workflows spawns three children through its callback (twice, as a replayed
    handler would: the second call answers the same executions, 200), then waits for them all.
    Its next dispatch (reason `children`) carries each child by the ref it gave, with its state
    and result, one of them dead-lettered; a workflow was made for it, holding all four."""
    spawned: list[httpx.Response] = []

    async def leaf(_: web.Request, job: dict[str, Any]) -> web.StreamResponse:
        if job["payload"]["n"] == 2:
            return await fail(_, job)
        return web.json_response({"result": {"square": job["payload"]["n"] ** 2}})

    async def fan(_: web.Request, job: dict[str, Any]) -> web.StreamResponse:
        if job.get("resume") is not None:
            return web.json_response({"result": job["resume"]})
        callback = job["callback"]
        children = {"jobs": [{"ref": f"part-{n}", "handler": "leaf", "payload": {"n": n}, "max_attempts": 1}
                             for n in (1, 2, 3)]}
        async with httpx.AsyncClient(timeout=10) as client:
            for _ in range(2):
                spawned.append(await client.post(callback["url"] + "/children", json=children,
                                                 headers={"Authorization": f"Bearer {callback['token']}"}))
        return web.json_response({"suspend": {"children": "all", "timeout_seconds": 60}})

    await register(api, "leaf", handler.route("/leaf", leaf))
    await register(api, "fan", handler.route("/fan", fan))
    execution_id = (await api.post("/v1/jobs", json={"handler": "fan"})).json()["id"]
    done = await wait_for_state(api, execution_id, "SUCCEEDED", timeout=20)
    first, again = spawned
    assert (first.status_code, again.status_code) == (201, 200), (first.text, again.text)
    ids = {i["ref"]: i["execution_id"] for i in first.json()["items"]}
    assert {i["ref"]: i["execution_id"] for i in again.json()["items"]} == ids  # the same executions
    assert again.json()["workflow_id"] == first.json()["workflow_id"]
    assert list(ids) == ["part-1", "part-2", "part-3"]
    resume = done["result"]
    assert (resume["n"], resume["reason"]) == (1, "children")
    assert resume["children"] == {
        "part-1": {"execution_id": ids["part-1"], "state": "SUCCEEDED", "result": {"square": 1}},
        "part-2": {"execution_id": ids["part-2"], "state": "DEAD_LETTER", "result": None},
        "part-3": {"execution_id": ids["part-3"], "state": "SUCCEEDED", "result": {"square": 9}}}
    assert done["attempt"] == 0 and done["workflow"]["ref"] == "fan"
    workflow = await wait_for_workflow(api, first.json()["workflow_id"], "FAILED")  # a child dead-lettered
    assert (workflow["name"], workflow["jobs"], workflow["counts"]) == (
        "fan", 4, {"SUCCEEDED": 3, "DEAD_LETTER": 1})
    jobs = (await api.get(f"/v1/workflows/{workflow['id']}/jobs")).json()["items"]
    assert [j["ref"] for j in jobs] == ["fan", "fan/part-1", "fan/part-2", "fan/part-3"]


async def test_spawned_children_may_depend_on_one_another_and_the_parent_sees_them_wait(
        api: httpx.AsyncClient, handler: HandlerServer) -> None:
    """Children of one parent depend on each other by the refs it gave (one spawned in an earlier
    call too); while they run, the parent's blockers count its unfinished children. A bad graph
    is a 422 naming the field, and once the attempt has ended a new ref is refused (409) while a
    replay of a spawned one still answers it."""
    release = asyncio.Event()
    calls: dict[str, httpx.Response] = {}

    async def slow(_: web.Request, job: dict[str, Any]) -> web.StreamResponse:
        await release.wait()
        return web.json_response({"result": job["payload"]})

    async def fan(_: web.Request, job: dict[str, Any]) -> web.StreamResponse:
        if job.get("resume") is not None:
            return web.json_response({"result": sorted(job["resume"]["children"])})
        url, headers = job["callback"]["url"] + "/children", {"Authorization": f"Bearer {job['callback']['token']}"}
        async with httpx.AsyncClient(timeout=10) as client:
            calls["first"] = await client.post(url, headers=headers, json={"jobs": [
                {"ref": "a", "handler": "slow", "payload": "a"}]})
            calls["bad"] = await client.post(url, headers=headers, json={"jobs": [
                {"ref": "x", "handler": "slow", "depends_on": ["nope"]}]})
            calls["second"] = await client.post(url, headers=headers, json={"jobs": [
                {"ref": "b", "handler": "slow", "payload": "b", "depends_on": ["a"]},
                {"ref": "c", "handler": "slow", "payload": "c", "depends_on": ["a", "b"]}]})
        calls["token"] = httpx.Response(200, json=job["callback"])
        return web.json_response({"suspend": {"children": "all"}})

    await register(api, "slow", handler.route("/slow", slow))
    await register(api, "fan", handler.route("/fan", fan))
    execution_id = (await api.post("/v1/jobs", json={"handler": "fan"})).json()["id"]
    await wait_for_state(api, execution_id, "WAITING")
    assert calls["first"].status_code == 201 and calls["second"].status_code == 201, calls["second"].text
    bad = calls["bad"].json()
    assert calls["bad"].status_code == 422 and bad["errors"][0]["field"] == "jobs[0].depends_on[0]", bad
    states = {i["ref"]: i["state"] for i in calls["second"].json()["items"]}
    assert states == {"b": "WAITING", "c": "WAITING"}
    [blocker] = (await api.get(f"/v1/executions/{execution_id}/blockers")).json()["items"]
    assert (blocker["reason"], blocker["children"]) == ("suspended", 3)
    callback = calls["token"].json()
    headers = {"Authorization": f"Bearer {callback['token']}"}
    async with httpx.AsyncClient(timeout=10) as client:
        late = await client.post(callback["url"] + "/children", headers=headers,
                                 json={"jobs": [{"ref": "d", "handler": "slow"}]})
        assert late.status_code == 409, late.text
        replay = await client.post(callback["url"] + "/children", headers=headers,
                                   json={"jobs": [{"ref": "a", "handler": "slow"}]})
        assert replay.status_code == 200
        assert [i["execution_id"] for i in replay.json()["items"]] == [
            i["execution_id"] for i in calls["first"].json()["items"]]
        release.set()
        done = await wait_for_state(api, execution_id, "SUCCEEDED", timeout=20)
        assert done["result"] == ["a", "b", "c"]
        page = (await client.get(callback["url"] + "/children", headers=headers, params={"limit": 2})).json()
        assert [c["ref"] for c in page["items"]] == ["a", "b"] and page["items"][0]["result"] == "a"
        rest = (await client.get(callback["url"] + "/children", headers=headers,
                                 params={"after": page["next_after"]})).json()
        assert [c["ref"] for c in rest["items"]] == ["c"] and rest["next_after"] is None
    order = [r["payload"] for r in handler.received if r.get("payload") in ("a", "b", "c")]
    assert order == ["a", "b", "c"]
