"""The dashboard's pages beyond the overview and executions over HTTP (app/ui): schedules, handlers,
nodes, flow control, workflows and subscriptions render what the services hold; their forms call
the API's services with its scopes and its confinement to queues."""

from __future__ import annotations

import re
import uuid
from typing import Any

import httpx

from tests.api.conftest import LATER, NOWHERE
from tests.conftest import sql
from tests.ui.conftest import BOOT
from tests.ui.test_dashboard_http import csrf_of, enqueue, sign_in

RECEIVER = "http://127.0.0.1:9/events"


def row(page: httpx.Response, attribute: str, value: str) -> str:
    found = re.search(rf'<tr {attribute}="{re.escape(value)}"[^>]*>(.*?)</tr>', page.text, re.S)
    assert found, page.text
    return found.group(1)


def button(html: str, action: str) -> str:
    found = re.search(rf'<button[^>]*data-action="{action}"[^>]*>', html, re.S)
    assert found, html
    return found.group(0)


def job(ref: str, *parents: str, **extra: Any) -> dict[str, Any]:
    return {"ref": ref, "handler": "h", "run_at": LATER, "depends_on": list(parents), **extra}


async def workflow(client: httpx.AsyncClient, jobs: list[dict[str, Any]], headers: dict[str, str] | None = None,
                   **extra: Any) -> dict[str, Any]:
    response = await client.post("/v1/workflows", json={"jobs": jobs, **extra}, headers=headers)
    assert response.status_code == 201, response.text
    return response.json()


async def schedule(client: httpx.AsyncClient, job_id: str, headers: dict[str, str] | None = None,
                   **fields: Any) -> None:
    body = {"cron": "0 8 * * *", "timezone": "Europe/Paris", "handler": "h", **fields}
    response = await client.put(f"/v1/schedules/{job_id}", json=body, headers=headers)
    assert response.status_code in (200, 201), response.text


async def failed_delivery(db, name: str, event_id: int, status: str = "failed") -> int:  # noqa: ANN001
    rows = await sql(db, "INSERT INTO job_event_deliveries (subscription, event_id, execution_id, type, occurred_at, "
                         "data, status, tries, last_try_at, last_status, last_error, next_try_at, deadline_at) "
                         "VALUES (:name, :event_id, gen_random_uuid(), 'execution.failed', now(), '{}', :status, 3, "
                         "now(), 502, 'bad gateway', now() + interval '1 minute', now() + interval '1 day') "
                         "RETURNING id",
                     name=name, event_id=event_id, status=status)
    return rows[0]["id"]


# --- schedules -----------------------------------------------------------------------------------

async def test_the_schedules_page_shows_cron_zone_next_fires_and_failures(open_ui, db):
    await schedule(open_ui, "nightly")
    await sql(db, "UPDATE job_schedules SET consecutive_failures = 2, last_failure_at = now() WHERE job_id = 'nightly'")
    page = await open_ui.get("/ui/schedules")
    assert page.status_code == 200
    cells = row(page, "data-schedule", "nightly")
    assert "0 8 * * *" in cells and "Europe/Paris" in cells
    assert len(re.findall(r"<span title=\"\d{4}-\d\d-\d\d \d\d:\d\d:00 UTC\">", cells)) == 3  # the next fires
    assert '<span class="error-text">2</span>' in cells
    assert 'data-action="trigger"' in cells and 'data-action="delete"' in cells
    assert '<a href="/ui/schedules" aria-current="page">Schedules</a>' in page.text


async def test_trigger_fires_a_schedule_now_and_delete_removes_it(open_ui):
    await schedule(open_ui, "nightly")
    page = await open_ui.get("/ui/schedules")
    fired = await open_ui.post("/ui/schedules/nightly/trigger", data={"csrf": csrf_of(page)})
    assert fired.status_code == 303 and fired.headers["location"].startswith("/ui/executions/")
    execution_id = fired.headers["location"].rsplit("/", 1)[1]
    assert (await open_ui.get(f"/v1/executions/{execution_id}")).json()["job_id"] == "nightly"
    gone = await open_ui.post("/ui/schedules/nightly/delete", data={"csrf": csrf_of(page)}, follow_redirects=True)
    assert "Schedule nightly deleted" in gone.text and 'data-schedule="nightly"' not in gone.text
    assert (await open_ui.get("/v1/schedules/nightly")).status_code == 404
    again = await open_ui.post("/ui/schedules/nightly/delete", data={"csrf": csrf_of(page)}, follow_redirects=True)
    assert 'class="flash error"' in again.text


# --- handlers and nodes --------------------------------------------------------------------------

async def test_the_handlers_page_shows_limits_in_flight_and_the_recent_failure_rate(open_ui, db):
    await open_ui.put("/v1/handlers/limited", json={"url": NOWHERE + "/limited", "max_concurrency": 7,
                                                     "timeout_seconds": 30, "key_concurrency": 2,
                                                     "rate_limit": {"limit": 10, "period_seconds": 60},
                                                     "batch": {"max_size": 25}})
    running = await enqueue(open_ui, handler="limited")
    await sql(db, "UPDATE job_executions SET state = 'PROCESSING', started_at = now(), locked_by = 'n1', "
                  "deadline_at = now() + interval '1 hour' WHERE id = :id", id=uuid.UUID(running))
    for kind in ("execution.succeeded", "execution.succeeded", "execution.succeeded", "execution.failed"):
        await sql(db, "INSERT INTO job_events (execution_id, event, type, attempt, occurred_at) "
                      "VALUES (:id, CAST(:event AS jsonb), :type, 1, now())",
                  id=uuid.UUID(running), event='{"queue": "default", "handler": "limited"}', type=kind)
    page = await open_ui.get("/ui/handlers")
    cells = row(page, "data-handler", "limited")
    assert NOWHERE + "/limited" in cells and "30.0 s" in cells and ">7<" in cells.replace(" ", "")
    assert "10 / min" in cells
    assert re.search(r"data-in-flight>1<", cells) and "25.0 %" in cells
    assert "closed" in cells  # its circuit
    assert "batch 25" in cells
    assert 'data-handler="h"' in page.text


async def test_the_nodes_page_lists_the_live_nodes(open_ui, db):
    await sql(db, "INSERT INTO job_server_heartbeats (server_id, last_heartbeat, started_at, queues) "
                  "VALUES ('node-a', now(), now() - interval '1 hour', ARRAY['mail'])")
    page = await open_ui.get("/ui/nodes")
    cells = row(page, "data-node", "node-a")
    assert "mail" in cells and "ago" in cells


# --- flow control --------------------------------------------------------------------------------

async def test_flow_control_shows_each_handlers_circuit_and_keys_and_pauses_and_resumes_one(open_ui, db):
    await enqueue(open_ui, concurrency_key="customer:42")
    await enqueue(open_ui, concurrency_key="customer:42")
    await sql(db, "INSERT INTO job_handler_flow (handler, circuit_state, circuit_until, circuit_failures) "
                  "VALUES ('h', 'open', now() + interval '1 minute', 5) ON CONFLICT (handler) DO UPDATE "
                  "SET circuit_state = 'open', circuit_until = now() + interval '1 minute', circuit_failures = 5")
    page = await open_ui.get("/ui/flow")
    section = page.text.split('data-handler="h"')[1]
    assert "open" in section and "5 failures in a row" in section
    cells = row(page, "data-key", "customer:42")
    assert '<td class="num">2</td>' in cells and "running" in cells
    paused = await open_ui.post("/ui/flow/h/keys/customer%3A42/pause", data={"csrf": csrf_of(page),
                                                                              "back": "/ui/flow"},
                                follow_redirects=True)
    assert "Key customer:42 of h paused." in paused.text
    assert 'data-action="resume"' in row(paused, "data-key", "customer:42")
    keys = (await open_ui.get("/v1/handlers/h/keys")).json()["items"]
    assert [(k["key"], k["paused"]) for k in keys] == [("customer:42", True)]
    only_paused = await open_ui.get("/ui/flow", params={"handler": "h", "state": "paused"})
    assert 'data-key="customer:42"' in only_paused.text
    await open_ui.post("/ui/flow/h/keys/customer%3A42/resume", data={"csrf": csrf_of(page)})
    assert [k["paused"] for k in (await open_ui.get("/v1/handlers/h/keys")).json()["items"]] == [False]
    assert (await open_ui.get("/ui/flow", params={"handler": "nope"})).status_code == 404


async def test_a_key_form_without_its_csrf_token_is_refused(open_ui):
    await enqueue(open_ui, concurrency_key="k1")
    assert (await open_ui.post("/ui/flow/h/keys/k1/pause", data={})).status_code == 403
    assert [k["paused"] for k in (await open_ui.get("/v1/handlers/h/keys")).json()["items"]] == [False]


# --- workflows -----------------------------------------------------------------------------------

async def test_the_workflows_list_filters_by_state_and_links_each(open_ui):
    made = await workflow(open_ui, [job("a"), job("b", "a")], name="etl")
    page = await open_ui.get("/ui/workflows")
    cells = row(page, "data-workflow-id", made["id"])
    assert "etl" in cells and "RUNNING" in cells and f'href="/ui/workflows/{made["id"]}"' in cells
    assert made["id"] not in (await open_ui.get("/ui/workflows", params={"state": "SUCCEEDED"})).text
    assert made["id"] in (await open_ui.get("/ui/workflows", params={"state": "RUNNING", "name": "etl"})).text


async def test_a_workflow_page_draws_its_graph_by_depth_and_lists_its_jobs(open_ui):
    made = await workflow(open_ui, [job("extract"), job("clean", "extract"), job("enrich", "extract"),
                                    job("load", "clean", "enrich")], name="etl")
    ids = {i["ref"]: i["execution_id"] for i in made["items"]}
    page = await open_ui.get(f"/ui/workflows/{made['id']}")
    assert page.status_code == 200
    graph = page.text.split('<svg class="graph"')[1].split("</svg>")[0]
    nodes = re.findall(r'<a href="/ui/executions/([^"]+)" class="node state-(\w+)" data-ref="([^"]+)"', graph)
    assert sorted((ref, state, execution) for execution, state, ref in nodes) == sorted(
        (ref, "waiting" if ref != "extract" else "enqueued", ids[ref]) for ref in ids)
    assert len(re.findall(r'class="edge"', graph)) == 4
    xs = {ref: float(x) for ref, x in re.findall(r'data-ref="([^"]+)".*?<rect x="([\d.]+)"', graph, re.S)}
    assert xs["extract"] < xs["clean"] == xs["enrich"] < xs["load"]
    for execution_id in ids.values():
        assert f'<tr data-execution-id="{execution_id}">' in page.text
    assert 'data-action="cancel"' in page.text and 'data-action="retry"' not in page.text
    assert (await open_ui.get(f"/ui/workflows/{uuid.uuid4()}")).status_code == 404


async def test_cancel_and_retry_a_workflow_from_its_page(open_ui, db):
    made = await workflow(open_ui, [job("a"), job("b", "a")])
    ids = {i["ref"]: i["execution_id"] for i in made["items"]}
    page = await open_ui.get(f"/ui/workflows/{made['id']}")
    nothing = await open_ui.post(f"/ui/workflows/{made['id']}/retry", data={"csrf": csrf_of(page)},
                                 follow_redirects=True)
    assert "nothing to retry" in nothing.text
    # a dead-lettered root: its child is cancelled, the workflow FAILED; retry runs the graph on
    await sql(db, "UPDATE job_executions SET state = 'DEAD_LETTER', completed_at = now() WHERE id = :id",
              id=uuid.UUID(ids["a"]))
    failed = await open_ui.get(f"/ui/workflows/{made['id']}")
    assert ">FAILED<" in failed.text and 'data-action="retry"' in failed.text
    retried = await open_ui.post(f"/ui/workflows/{made['id']}/retry", data={"csrf": csrf_of(page)},
                                 follow_redirects=True)
    assert "Retried: 1 dead-lettered job enqueued again, 1 waiting again." in retried.text
    assert (await open_ui.get(f"/v1/workflows/{made['id']}")).json()["state"] == "RUNNING"
    cancelled = await open_ui.post(f"/ui/workflows/{made['id']}/cancel", data={"csrf": csrf_of(page)},
                                   follow_redirects=True)
    assert "the workflow is CANCELLED now" in cancelled.text
    assert (await open_ui.get(f"/v1/executions/{ids['b']}")).json()["state"] == "CANCELLED"


# --- subscriptions -------------------------------------------------------------------------------

async def test_the_subscriptions_page_shows_state_backlog_and_failing_deliveries_with_resend(open_ui, db):
    assert (await open_ui.put("/v1/subscriptions/audit", json={"url": RECEIVER})).status_code == 201
    await sql(db, "UPDATE job_subscriptions SET failures = 4, failing_since = now(), last_error = 'HTTP 502'")
    failing = await failed_delivery(db, "audit", 1)
    dead = await failed_delivery(db, "audit", 2, "dead")
    page = await open_ui.get("/ui/subscriptions")
    section = page.text.split('data-subscription="audit"')[1]
    assert "failing" in section and "HTTP 502" in section and re.search(r"data-backlog>1<", section)
    assert 'data-action="resend"' in row(page, "data-delivery-id", str(failing))
    assert "bad gateway" in row(page, "data-delivery-id", str(dead))
    sent = await open_ui.post(f"/ui/subscriptions/audit/deliveries/{dead}/resend", data={"csrf": csrf_of(page)},
                              follow_redirects=True)
    assert f"Delivery {dead} of audit is sent again now." in sent.text
    statuses = await sql(db, "SELECT status FROM job_event_deliveries WHERE id = :id", id=dead)
    assert statuses[0]["status"] == "pending"
    missing = await open_ui.post("/ui/subscriptions/audit/deliveries/999999/resend", data={"csrf": csrf_of(page)},
                                 follow_redirects=True)
    assert 'class="flash error"' in missing.text


# --- scopes and queues ---------------------------------------------------------------------------

async def test_a_read_key_sees_every_new_page_with_its_buttons_disabled_and_its_posts_refused(keyed):
    await schedule(keyed, "nightly", headers=BOOT)
    await enqueue(keyed, headers=BOOT, concurrency_key="k1")
    made = await workflow(keyed, [job("a"), job("b", "a")], headers=BOOT)
    created = await keyed.post("/v1/api-keys", json={"name": "viewer", "scopes": ["read"]}, headers=BOOT)
    assert (await sign_in(keyed, created.json()["key"])).status_code == 303
    for path in ("/ui/schedules", "/ui/handlers", "/ui/nodes", "/ui/flow", "/ui/workflows", "/ui/subscriptions"):
        assert (await keyed.get(path)).status_code == 200, path
    schedules = await keyed.get("/ui/schedules")
    assert "disabled" in button(schedules.text, "trigger") and "disabled" in button(schedules.text, "delete")
    refused = await keyed.post("/ui/schedules/nightly/trigger", data={"csrf": csrf_of(schedules)})
    assert refused.status_code == 403 and "lacks scope admin" in refused.text
    flow = await keyed.get("/ui/flow")
    assert "disabled" in button(flow.text, "pause")
    assert (await keyed.post("/ui/flow/h/keys/k1/pause", data={"csrf": csrf_of(flow)})).status_code == 403
    page = await keyed.get(f"/ui/workflows/{made['id']}")
    assert "disabled" in button(page.text, "cancel")
    assert (await keyed.post(f"/ui/workflows/{made['id']}/cancel", data={"csrf": csrf_of(page)})).status_code == 403
    assert "need an API key with scope admin" in (await keyed.get("/ui/subscriptions")).text
    assert (await keyed.get(f"/v1/workflows/{made['id']}", headers=BOOT)).json()["state"] == "RUNNING"


async def test_a_key_limited_to_queues_sees_only_what_the_api_shows_it(keyed):
    await schedule(keyed, "mine", headers=BOOT, queue="mail")
    await schedule(keyed, "theirs", headers=BOOT, queue="billing")
    await enqueue(keyed, headers=BOOT, queue="mail", concurrency_key="k1")
    mine = await workflow(keyed, [job("a", queue="mail")], headers=BOOT)
    theirs = await workflow(keyed, [job("a", queue="billing")], headers=BOOT)
    created = await keyed.post("/v1/api-keys", json={"name": "mailer", "scopes": ["operate"], "queues": ["mail"]},
                               headers=BOOT)
    assert created.status_code == 201, created.text
    assert (await sign_in(keyed, created.json()["key"])).status_code == 303
    schedules = await keyed.get("/ui/schedules")
    assert 'data-schedule="mine"' in schedules.text and 'data-schedule="theirs"' not in schedules.text
    workflows = await keyed.get("/ui/workflows")
    assert mine["id"] in workflows.text and theirs["id"] not in workflows.text
    assert (await keyed.get(f"/ui/workflows/{theirs['id']}")).status_code == 404
    flow = await keyed.get("/ui/flow")
    assert "limited to queues" in flow.text and 'data-key="k1"' not in flow.text
    refused = await keyed.post("/ui/flow/h/keys/k1/pause", data={"csrf": csrf_of(flow)})
    assert refused.status_code == 403 and "spans every queue" in refused.text
    assert (await keyed.post(f"/ui/workflows/{theirs['id']}/cancel", data={"csrf": csrf_of(flow)},
                             follow_redirects=True)).url.path == f"/ui/workflows/{theirs['id']}"
    assert (await keyed.get(f"/v1/workflows/{theirs['id']}", headers=BOOT)).json()["state"] == "RUNNING"
