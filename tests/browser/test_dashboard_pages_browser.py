"""The dashboard's schedules, handlers, flow control, nodes, workflows and subscriptions pages in a
real browser: pause and resume a concurrency key, open a workflow and see its graph, and each page
once, light and dark, for a look at its screenshot."""

from __future__ import annotations

import re
import uuid
from typing import Any

from aiohttp import web

from app.db.database import Database
from tests.browser.conftest import screenshot
from tests.browser.test_dashboard_browser import LATER, enqueue, fails
from tests.conftest import HandlerServer, register, sql, wait_for_state


async def ok(_: web.Request, job: dict[str, Any]) -> web.StreamResponse:
    return web.json_response({"result": {"done": True}})


async def test_pause_and_resume_a_key_on_the_flow_control_page(node, handler: HandlerServer, browser_page):
    page = browser_page
    await register(node, "sync", handler.route("/sync", ok), key_concurrency=1)
    for _ in range(3):
        await enqueue(node, "sync", concurrency_key="tenant-7", run_at=LATER)
    await page.goto(f"{node.server.url}/ui/flow")
    row = page.locator('[data-handler="sync"] tr[data-key="tenant-7"]')
    await row.wait_for()
    assert "3" in await row.locator("td.num").first.inner_text()
    await row.locator('[data-action="pause"]').click()
    await page.wait_for_selector('[data-handler="sync"] tr[data-key="tenant-7"] [data-action="resume"]')
    assert "paused" in await row.inner_text()
    assert "Key tenant-7 of sync paused." in await page.locator(".flash").inner_text()
    assert [k["paused"] for k in (await node.get("/v1/handlers/sync/keys")).json()["items"]] == [True]
    await screenshot(page, "flow-control-paused")
    await row.locator('[data-action="resume"]').click()
    await page.wait_for_selector('[data-handler="sync"] tr[data-key="tenant-7"] [data-action="pause"]')
    assert [k["paused"] for k in (await node.get("/v1/handlers/sync/keys")).json()["items"]] == [False]


async def test_open_a_workflow_and_see_its_graph(node, handler: HandlerServer, browser_page):
    page = browser_page
    await register(node, "step", handler.route("/step", ok))
    await register(node, "broken", handler.route("/broken", fails))

    def job(ref: str, *parents: str, **extra: Any) -> dict[str, Any]:
        return {"ref": ref, "handler": "step", "depends_on": list(parents), **extra}

    jobs = [job("extract"), job("clean-customers", "extract"), job("clean-orders", "extract"),
            job("enrich", "clean-customers", "clean-orders", handler="broken", max_attempts=1),
            job("load-warehouse", "enrich"), job("report", "load-warehouse"),
            job("archive-later", run_at=LATER), job("notify", "archive-later", "clean-orders")]
    made = await node.post("/v1/workflows", json={"name": "nightly-etl", "jobs": jobs})
    assert made.status_code == 201, made.text
    workflow = made.json()
    ids = {i["ref"]: i["execution_id"] for i in workflow["items"]}
    await wait_for_state(node, ids["enrich"], "DEAD_LETTER", timeout=20)
    await wait_for_state(node, ids["report"], "CANCELLED")
    states = {ref: (await node.get(f"/v1/executions/{i}")).json()["state"] for ref, i in ids.items()}
    await page.goto(f"{node.server.url}/ui/workflows")
    await page.locator(f'tr[data-workflow-id="{workflow["id"]}"] a').first.click()
    await page.wait_for_url(re.compile(f"/ui/workflows/{workflow['id']}$"))
    nodes = page.locator("svg#graph a.node")
    assert await nodes.count() == len(jobs)
    for ref, state in states.items():
        drawn = page.locator(f'svg#graph a.node[data-ref="{ref}"]')
        assert await drawn.count() == 1
        assert f"state-{state.lower()}" in (await drawn.get_attribute("class")).split(), (ref, state)
    assert await page.locator("svg#graph path.edge").count() == 8
    assert await page.locator('[data-action="retry"]').is_enabled()
    await screenshot(page, "workflow")
    await page.locator('svg#graph a.node[data-ref="enrich"]').click()
    await page.wait_for_url(re.compile(f"/ui/executions/{ids['enrich']}$"))


async def test_each_new_page_loads_light_and_dark(node, handler: HandlerServer, db: Database, browser_page):
    page = browser_page
    await register(node, "mailer", handler.route("/mail", ok), max_concurrency=20, timeout_seconds=30,
                   rate_limit={"limit": 100, "period_seconds": 60})
    await register(node, "broken", handler.route("/broken", fails), adaptive=True, max_concurrency=8)
    done = [await enqueue(node, "mailer", queue="mail") for _ in range(3)]
    dead = await enqueue(node, "broken", queue="mail", max_attempts=1)
    for execution_id in done:
        await wait_for_state(node, execution_id, "SUCCEEDED")
    await wait_for_state(node, dead, "DEAD_LETTER")
    await enqueue(node, "mailer", queue="mail", concurrency_key="customer:42", run_at=LATER)
    for job_id, cron, zone in (("nightly-report", "0 2 * * *", "Europe/Paris"), ("every-5-min", "*/5 * * * *", "UTC")):
        response = await node.put(f"/v1/schedules/{job_id}", json={"cron": cron, "timezone": zone, "handler": "mailer"})
        assert response.status_code == 201, response.text
    await sql(db, "UPDATE job_schedules SET consecutive_failures = 3, last_failure_at = now() - interval '5 minutes', "
                  "last_success_at = now() - interval '1 day' WHERE job_id = 'nightly-report'")
    made = await node.post("/v1/workflows", json={"name": "welcome", "jobs": [
        {"ref": "a", "handler": "mailer", "run_at": LATER}, {"ref": "b", "handler": "mailer", "depends_on": ["a"]}]})
    assert made.status_code == 201, made.text
    assert (await node.put("/v1/subscriptions/audit", json={"url": "http://127.0.0.1:9/events"})).status_code == 201
    await sql(db, "UPDATE job_subscriptions SET failures = 4, failing_since = now() - interval '10 minutes', "
                  "last_error = 'HTTP 502: bad gateway', retry_at = now() + interval '1 minute'")
    await sql(db, "INSERT INTO job_event_deliveries (subscription, event_id, execution_id, type, occurred_at, data, "
                  "status, tries, last_try_at, last_status, last_error, next_try_at, deadline_at) VALUES "
                  "('audit', 1, :id, 'execution.failed', now(), '{}', 'failed', 4, now(), 502, 'bad gateway', "
                  "now() + interval '1 minute', now() + interval '1 day'), "
                  "('audit', 2, :id, 'execution.dead_lettered', now(), '{}', 'dead', 9, now(), NULL, "
                  "'connection refused', now(), now())", id=uuid.UUID(dead))
    pages = {"schedules": ("/ui/schedules", 'tr[data-schedule="nightly-report"]'),
             "handlers": ("/ui/handlers", 'tr[data-handler="broken"]'),
             "flow-control": ("/ui/flow", 'tr[data-key="customer:42"]'),
             "nodes": ("/ui/nodes", "#nodes tr[data-node]"),
             "workflows": ("/ui/workflows", "#workflows tr[data-workflow-id]"),
             "subscriptions": ("/ui/subscriptions", '[data-subscription="audit"] tr[data-delivery-id]')}
    dark = await page.context.browser.new_context(viewport={"width": 1360, "height": 900}, color_scheme="dark")
    try:
        dark_page = await dark.new_page()
        for name, (path, selector) in pages.items():
            for shown, suffix in ((page, ""), (dark_page, "-dark")):
                await shown.goto(f"{node.server.url}{path}")
                await shown.locator(selector).first.wait_for()
                assert await shown.locator(f'header nav a[href="{path}"][aria-current="page"]').count() == 1
                await screenshot(shown, name + suffix)
        await dark_page.goto(f"{node.server.url}/ui/workflows/{made.json()['id']}")
        await dark_page.locator("svg#graph a.node").first.wait_for()
        await screenshot(dark_page, "workflow-dark")
    finally:
        await dark.close()
