"""The dashboard in a real browser: a Jobwire server with its dispatcher, a real handler, and
Chromium clicking what a user clicks."""

from __future__ import annotations

import asyncio
import re
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

import httpx
from aiohttp import web

from app.db.database import Database
from tests.browser.conftest import screenshot
from tests.conftest import HandlerServer, RunningServer, register, sql, wait_for_state

LATER = "2999-01-01T00:00:00Z"
BOOT = {"authorization": "Bearer boot"}


async def fails(_: web.Request, job: dict[str, Any]) -> web.StreamResponse:
    return web.json_response({"error": "the mail server said no"}, status=503)


def failing_then_ok(times: int):  # noqa: ANN201
    calls = {"n": 0}

    async def behave(_: web.Request, job: dict[str, Any]) -> web.StreamResponse:
        calls["n"] += 1
        if calls["n"] <= times:
            return web.json_response({"error": "not yet"}, status=500)
        return web.json_response({"result": {"sent": True, "attempt": job["attempt"]}})

    return behave


async def enqueue(client: httpx.AsyncClient, handler: str, headers: dict[str, str] | None = None,
                  **fields: Any) -> str:
    response = await client.post("/v1/jobs", json={"handler": handler, **fields}, headers=headers)
    assert response.status_code in (200, 201), response.text
    return response.json()["id"]


async def test_the_overview_shows_a_queue_its_outcomes_and_failures(node, handler: HandlerServer, browser_page):
    page = browser_page
    await register(node, "mailer", handler.route("/ok", lambda r, j: _ok(j)))
    await register(node, "broken", handler.route("/fails", fails))
    done = [await enqueue(node, "mailer", queue="mail", payload={"to": f"user{i}@example.com"}) for i in range(6)]
    broken = await enqueue(node, "broken", queue="mail", max_attempts=1)
    await enqueue(node, "mailer", queue="mail", run_at=LATER)
    for execution_id in done:
        await wait_for_state(node, execution_id, "SUCCEEDED")
    await wait_for_state(node, broken, "DEAD_LETTER")
    await page.goto(f"{node.server.url}/")
    row = page.locator('tr[data-queue="mail"]')
    await row.wait_for()
    assert "mail" in await row.inner_text()
    assert await row.locator('[data-action="pause"]').is_enabled()
    assert await page.locator("svg.chart rect.bar.ok").count() >= 1
    assert await page.locator(f'#failures tr[data-execution-id="{broken}"]').count() == 1
    assert await page.locator("#nodes tr").count() >= 2  # the head and this node
    await screenshot(page, "overview")
    dark = await page.context.browser.new_context(viewport={"width": 1360, "height": 900}, color_scheme="dark")
    try:
        dark_page = await dark.new_page()
        await dark_page.goto(f"{node.server.url}/ui")
        await screenshot(dark_page, "overview-dark")
    finally:
        await dark.close()


async def _ok(job: dict[str, Any]) -> web.StreamResponse:
    return web.json_response({"result": {"sent": True}})


async def test_an_execution_shows_its_attempts_and_logs(node, handler: HandlerServer, db: Database, browser_page):
    page = browser_page
    await register(node, "flaky", handler.route("/flaky", failing_then_ok(2)))
    execution_id = await enqueue(node, "flaky", job_id="invoice-42", payload={"invoice": 42, "lines": [1, 2, 3]},
                                 metadata={"tenant": "acme"}, max_attempts=5)
    await wait_for_state(node, execution_id, "SUCCEEDED", timeout=20)
    await sql(db, "INSERT INTO job_logs (execution_id, attempt, level, message) VALUES "
                  "(:id, 0, 'INFO', 'rendering invoice 42'), (:id, 1, 'WARN', 'the PDF service is slow'), "
                  "(:id, 2, 'ERROR', 'retrying the upload <once>')", id=uuid.UUID(execution_id))
    await page.goto(f"{node.server.url}/ui/executions")
    await page.locator(f'tr[data-execution-id="{execution_id}"] a').first.click()
    await page.wait_for_url(re.compile(f"/ui/executions/{execution_id}$"))
    attempts = page.locator("#attempts li.attempt")
    assert await attempts.count() == 3
    assert "500" in await attempts.nth(0).inner_text()
    assert "SUCCEEDED" in await attempts.nth(2).inner_text()
    logs = await page.locator("#logs").inner_text()
    assert "rendering invoice 42" in logs and "retrying the upload <once>" in logs
    assert "acme" in await page.locator("pre.json").nth(0).inner_text() or "acme" in await page.content()
    await screenshot(page, "execution")
    await page.select_option('select[name="level"]', "ERROR")
    await page.click('#logs button[type="submit"]')
    await page.wait_for_url(re.compile("level=ERROR"))
    logs = await page.locator("#logs").inner_text()
    assert "retrying the upload" in logs and "rendering invoice 42" not in logs


async def test_retry_a_dead_letter_from_its_page_and_see_it_succeed(node, handler: HandlerServer, browser_page):
    page = browser_page
    outcome = {"fail": True}

    async def sometimes(_: web.Request, job: dict[str, Any]) -> web.StreamResponse:
        if outcome["fail"]:
            return web.json_response({"error": "down"}, status=503)
        return web.json_response({"result": "ok"})

    await register(node, "report", handler.route("/report", sometimes))
    execution_id = await enqueue(node, "report", queue="reports", max_attempts=1)
    await wait_for_state(node, execution_id, "DEAD_LETTER")
    await page.goto(f"{node.server.url}/ui/dead-letters?queue=reports")
    assert await page.locator(f'tr[data-execution-id="{execution_id}"]').count() == 1
    await screenshot(page, "dead-letters")
    outcome["fail"] = False
    await page.goto(f"{node.server.url}/ui/executions/{execution_id}")
    assert await page.locator('[data-action="cancel"]').count() == 0
    await page.click('[data-action="retry"]')
    await page.wait_for_selector(".flash")
    await wait_for_state(node, execution_id, "SUCCEEDED")
    await page.reload()
    assert "SUCCEEDED" in await page.locator("h1 .state").inner_text()
    assert await page.locator("#attempts li.attempt").count() == 2


async def test_bulk_retry_all_matching_after_reading_the_count(node, handler: HandlerServer, db: Database,
                                                               browser_page):
    page = browser_page
    await register(node, "h", handler.route("/h", lambda r, j: _ok(j)))
    ids = [await enqueue(node, "h", queue="bulk", run_at=LATER) for _ in range(3)]
    for execution_id in ids:
        await sql(db, "UPDATE job_executions SET state = 'DEAD_LETTER', completed_at = now(), scheduled_at = now(), "
                      "last_error = 'gave up' WHERE id = :id", id=uuid.UUID(execution_id))
    await page.goto(f"{node.server.url}/ui/dead-letters?queue=bulk")
    await page.click('button[value="retry-all"]')
    count = page.locator("#confirm-count")
    assert await count.get_attribute("data-count") == "3"
    await screenshot(page, "dead-letters-confirm")
    await page.click('form [data-action="retry"]')
    await page.wait_for_selector(".flash")
    assert "Retried 3 executions" in await page.locator(".flash").inner_text()
    for execution_id in ids:
        await wait_for_state(node, execution_id, "SUCCEEDED")


async def test_pause_and_resume_a_queue(node, handler: HandlerServer, browser_page):
    page = browser_page
    await register(node, "h", handler.route("/h", lambda r, j: _ok(j)))
    await enqueue(node, "h", queue="billing", run_at=LATER)
    await page.goto(f"{node.server.url}/ui")
    row = page.locator('tr[data-queue="billing"]')
    await row.locator('[data-action="pause"]').click()
    await page.wait_for_selector('tr[data-queue="billing"] [data-action="resume"]')
    assert "paused" in await row.inner_text()
    assert [q["paused"] for q in (await node.get("/v1/queues")).json()["items"] if q["name"] == "billing"] == [True]
    await screenshot(page, "overview-paused")
    await row.locator('[data-action="resume"]').click()
    await page.wait_for_selector('tr[data-queue="billing"] [data-action="pause"]')
    assert [q["paused"] for q in (await node.get("/v1/queues")).json()["items"] if q["name"] == "billing"] == [False]


async def test_the_page_refreshes_its_figures_on_its_own(node, handler: HandlerServer, db: Database, browser_page):
    page = browser_page
    await register(node, "h", handler.route("/h", lambda r, j: _ok(j)))
    await page.goto(f"{node.server.url}/ui/executions")
    await page.select_option("[data-refresh-interval]", "2")
    execution_id = await enqueue(node, "h", queue="live", run_at=LATER)
    await page.wait_for_selector(f'tr[data-execution-id="{execution_id}"]', timeout=10_000)
    assert page.url.endswith("/ui/executions")  # no reload: the region was swapped
    # A selected row holds the refresh back: the user's selection is not swapped away.
    await sql(db, "UPDATE job_executions SET state = 'DEAD_LETTER', completed_at = now() WHERE id = :id",
              id=uuid.UUID(execution_id))
    await page.goto(f"{node.server.url}/ui/dead-letters")
    await page.check(f'tr[data-execution-id="{execution_id}"] input[type=checkbox]')
    later = await enqueue(node, "h", queue="live", run_at=LATER)
    await sql(db, "UPDATE job_executions SET state = 'DEAD_LETTER', completed_at = now() WHERE id = :id",
              id=uuid.UUID(later))
    await asyncio.sleep(3)
    assert await page.locator(f'tr[data-execution-id="{later}"]').count() == 0
    await page.uncheck(f'tr[data-execution-id="{execution_id}"] input[type=checkbox]')
    await page.wait_for_selector(f'tr[data-execution-id="{later}"]', timeout=10_000)
    # Off: nothing is fetched.
    await page.select_option("[data-refresh-interval]", "0")
    last = await enqueue(node, "h", queue="live", run_at=LATER)
    await sql(db, "UPDATE job_executions SET state = 'DEAD_LETTER', completed_at = now() WHERE id = :id",
              id=uuid.UUID(last))
    await asyncio.sleep(3)
    assert await page.locator(f'tr[data-execution-id="{last}"]').count() == 0


async def test_sign_in_with_a_key_and_a_read_key_sees_its_buttons_disabled(
        jobwire: Callable[..., Awaitable[RunningServer]], handler: HandlerServer, browser_page):
    page = browser_page
    server = await jobwire(api_keys=["boot"])
    server.app.state.ui.dashboard.cache_seconds = 0
    async with httpx.AsyncClient(base_url=server.url, timeout=10) as client:
        response = await client.put("/v1/handlers/h", json={"url": handler.route("/h", fails)}, headers=BOOT)
        assert response.status_code in (200, 201)
        execution_id = await enqueue(client, "h", headers=BOOT, queue="mail", run_at=LATER)
        created = await client.post("/v1/api-keys", json={"name": "support desk", "scopes": ["read"]}, headers=BOOT)
        key = created.json()["key"]
    await page.goto(f"{server.url}/ui")
    await page.wait_for_url(re.compile("/ui/sign-in"))
    await screenshot(page, "sign-in")
    await page.fill('input[name="key"]', "not a key")
    await page.click('button[type="submit"]')
    assert "not an API key" in await page.locator(".flash.error").inner_text()
    await page.fill('input[name="key"]', key)
    await page.click('button[type="submit"]')
    await page.wait_for_url(re.compile("/ui$"))
    assert "support desk" in await page.locator(".who").inner_text()
    assert await page.locator('tr[data-queue="mail"] [data-action="pause"]').is_disabled()
    await screenshot(page, "overview-read-key")
    await page.goto(f"{server.url}/ui/executions/{execution_id}")
    assert await page.locator('[data-action="cancel"]').is_disabled()
    # A form posted without its CSRF token (as another site would) is refused.
    status = await page.evaluate("""async () => (await fetch('/ui/queues/mail/pause', {method: 'POST',
        headers: {'content-type': 'application/x-www-form-urlencoded'}, body: 'x=1'})).status""")
    assert status == 403
    await page.click("button.link")  # sign out
    await page.wait_for_url(re.compile("/ui/sign-in"))
