"""The dashboard over HTTP (app/ui): its pages render what the services hold, forms carry a CSRF
token and the key's scope, sign-in keeps a session cookie the /v1 routes never accept."""

from __future__ import annotations

import re
import uuid
from typing import Any

import httpx

from app.db.database import Database
from tests.api.conftest import LATER
from tests.conftest import sql
from tests.ui.conftest import BOOT



def csrf_of(page: httpx.Response) -> str:
    found = re.search(r'name="csrf" value="([^"]+)"', page.text)
    assert found, page.text
    return found.group(1)


async def enqueue(client: httpx.AsyncClient, headers: dict[str, str] | None = None, **fields: Any) -> str:
    response = await client.post("/v1/jobs", json={"handler": "h", "run_at": LATER, **fields}, headers=headers)
    assert response.status_code in (200, 201), response.text
    return response.json()["id"]


async def dead_letter(db: Database, execution_id: str, error: str = "boom") -> None:
    await sql(db, "UPDATE job_executions SET state = 'DEAD_LETTER', started_at = now(), completed_at = now(), "
                  "last_error = :error WHERE id = :id", error=error, id=uuid.UUID(execution_id))


async def sign_in(client: httpx.AsyncClient, key: str, next_path: str = "/ui") -> httpx.Response:
    page = await client.get("/ui/sign-in", params={"next": next_path})
    assert page.status_code == 200
    return await client.post("/ui/sign-in", data={"key": key, "next": next_path, "csrf": csrf_of(page)})


# --- pages ---------------------------------------------------------------------------------------

async def test_the_root_leads_to_the_dashboard_and_its_assets_are_served_by_the_node(open_ui):
    response = await open_ui.get("/", follow_redirects=False)
    assert response.status_code == 307 and response.headers["location"] == "/ui"
    css = await open_ui.get("/ui/static/ui.css")
    assert css.status_code == 200 and "prefers-color-scheme: dark" in css.text
    js = await open_ui.get("/ui/static/ui.js")
    assert js.status_code == 200 and "data-refresh" in js.text
    page = await open_ui.get("/ui")
    assert 'href="/ui/static/ui.css"' in page.text and "http://" not in page.text.split("<main>")[0].replace(
        'content="light dark"', "")


async def test_the_overview_shows_each_queue_with_its_depths_and_a_pause_button(open_ui):
    await enqueue(open_ui, queue="mail")
    await enqueue(open_ui, queue="mail")
    page = await open_ui.get("/ui")
    assert page.status_code == 200
    assert page.headers["content-type"].startswith("text/html")
    assert "frame-ancestors 'none'" in page.headers["content-security-policy"]
    row = re.search(r'<tr data-queue="mail">(.*?)</tr>', page.text, re.S)
    assert row, page.text
    assert 'data-action="pause"' in row.group(1)
    assert re.search(r'<td class="num">2</td>', row.group(1))  # scheduled (for later)
    assert "Outcomes per minute" in page.text and "<svg" in page.text
    assert "Live nodes" in page.text and "Recent failures" in page.text


async def test_the_overview_lists_recent_failures_from_the_outcome_events(open_ui, db):
    execution_id = await enqueue(open_ui, queue="mail")
    await sql(db, "INSERT INTO job_events (execution_id, event, type, attempt, node, http_status, error, "
                  "occurred_at) VALUES (:id, CAST(:event AS jsonb), 'execution.failed', 1, 'n1', 500, 'kaput', now())",
              id=uuid.UUID(execution_id), event='{"queue": "mail", "handler": "h", "job_id": "j1"}')
    page = await open_ui.get("/ui")
    failures = page.text.split('id="failures"')[1]
    assert f'data-execution-id="{execution_id}"' in failures and "kaput" in failures and "500" in failures
    assert "1 in all" in page.text  # the chart counts it


async def test_the_executions_list_filters_by_the_query_string_and_links_each_row(open_ui):
    mail = await enqueue(open_ui, queue="mail", job_id="welcome")
    other = await enqueue(open_ui, queue="other")
    page = await open_ui.get("/ui/executions")
    assert f'data-execution-id="{mail}"' in page.text and f'data-execution-id="{other}"' in page.text
    assert f'href="/ui/executions/{mail}"' in page.text
    filtered = await open_ui.get("/ui/executions", params={"queue": "mail", "state": "ENQUEUED"})
    assert f'data-execution-id="{mail}"' in filtered.text and f'data-execution-id="{other}"' not in filtered.text
    assert 'value="mail"' in filtered.text  # the form shows the filter
    none = await open_ui.get("/ui/executions", params={"job_id": "nope"})
    assert "Nothing matches" in none.text


async def test_the_executions_list_takes_every_filter_of_the_listing(open_ui):
    acme = await enqueue(open_ui, queue="tenants", metadata={"tenant": "acme"}, idempotency_key="order-7")
    other = await enqueue(open_ui, queue="tenants", metadata={"tenant": "other"})
    by_metadata = await open_ui.get("/ui/executions", params={"metadata": "tenant:acme"})
    assert f'data-execution-id="{acme}"' in by_metadata.text and f'data-execution-id="{other}"' not in by_metadata.text
    assert 'value="tenant:acme"' in by_metadata.text
    by_key = await open_ui.get("/ui/executions", params={"idempotency_key": "order-7"})
    assert re.findall(r'<tr data-execution-id="([^"]+)"', by_key.text) == [acme]
    later = await open_ui.get("/ui/executions", params={"queue": "tenants", "created_after": "2999-01-01T00:00:00Z"})
    assert "Nothing matches" in later.text
    window = await open_ui.get("/ui/executions", params={"queue": "tenants", "created_after": "2000-01-01T00:00:00Z",
                                                         "created_before": "2999-01-01T00:00:00+02:00"})
    assert set(re.findall(r'<tr data-execution-id="([^"]+)"', window.text)) == {acme, other}


async def test_a_bad_filter_is_named_on_the_page_not_a_server_error(open_ui):
    for params, field in (({"metadata": "no-colon"}, "metadata"), ({"created_after": "yesterday"}, "created_after"),
                          ({"created_after": "2026-12-01T00:00:00"}, "created_after"),
                          ({"created_after": "2026-12-02T00:00:00Z", "created_before": "2026-12-01T00:00:00Z"},
                           "created_after")):
        page = await open_ui.get("/ui/executions", params=params)
        assert page.status_code == 200 and field in page.text and "data-execution-id" not in page.text, params


async def test_the_executions_list_pages_with_the_listing_cursor(open_ui):
    ids = [await enqueue(open_ui, queue="paged") for _ in range(55)]
    first = await open_ui.get("/ui/executions", params={"queue": "paged"})
    shown = set(re.findall(r'<tr data-execution-id="([^"]+)"', first.text))
    assert len(shown) == 50
    next_link = re.search(r'href="(/ui/executions\?[^"]*cursor=[^"]+)" rel="next"', first.text)
    assert next_link, first.text
    second = await open_ui.get(next_link.group(1).replace("&amp;", "&"))
    rest = set(re.findall(r'<tr data-execution-id="([^"]+)"', second.text))
    assert shown | rest == set(ids) and not shown & rest


async def test_an_execution_page_shows_its_fields_logs_and_escaped_json(open_ui, db):
    execution_id = await enqueue(open_ui, job_id="report-1", payload={"html": "<script>alert(1)</script>"},
                                 metadata={"tenant": "acme"})
    await sql(db, "INSERT INTO job_logs (execution_id, attempt, level, message) VALUES "
                  "(:id, 1, 'INFO', 'fine'), (:id, 1, 'ERROR', 'bad <b>')", id=uuid.UUID(execution_id))
    await sql(db, "INSERT INTO job_steps (execution_id, name, result) VALUES (:id, 'fetch', '{\"rows\": 3}')",
              id=uuid.UUID(execution_id))
    page = await open_ui.get(f"/ui/executions/{execution_id}")
    assert page.status_code == 200
    assert "report-1" in page.text and execution_id in page.text
    assert "<script>alert(1)</script>" not in page.text and "&lt;script&gt;alert(1)&lt;/script&gt;" in page.text
    assert "acme" in page.text and "fetch" in page.text
    assert "fine" in page.text and "bad &lt;b&gt;" in page.text
    assert 'data-action="cancel"' in page.text and 'data-action="retry"' not in page.text
    errors_only = await open_ui.get(f"/ui/executions/{execution_id}", params={"level": "ERROR"})
    assert "bad &lt;b&gt;" in errors_only.text and ">fine<" not in errors_only.text
    assert (await open_ui.get(f"/ui/executions/{uuid.uuid4()}")).status_code == 404
    assert (await open_ui.get("/ui/executions/not-a-uuid")).status_code == 404


async def test_cancel_and_retry_from_an_execution_page(open_ui):
    execution_id = await enqueue(open_ui)
    page = await open_ui.get(f"/ui/executions/{execution_id}")
    done = await open_ui.post(f"/ui/executions/{execution_id}/cancel", data={"csrf": csrf_of(page)})
    assert done.status_code == 303 and done.headers["location"] == f"/ui/executions/{execution_id}"
    page = await open_ui.get(f"/ui/executions/{execution_id}")
    assert "CANCELLED now" in page.text  # the flash
    assert 'data-action="retry"' in page.text and 'data-action="cancel"' not in page.text
    await open_ui.post(f"/ui/executions/{execution_id}/retry", data={"csrf": csrf_of(page)})
    assert (await open_ui.get(f"/v1/executions/{execution_id}")).json()["state"] == "ENQUEUED"


async def test_dead_letters_retry_a_selection_and_all_matching_after_a_confirmation_with_the_count(open_ui, db):
    ids = [await enqueue(open_ui, queue="q1") for _ in range(3)] + [await enqueue(open_ui, queue="q2")]
    for execution_id in ids:
        await dead_letter(db, execution_id)
    page = await open_ui.get("/ui/dead-letters", params={"queue": "q1"})
    listed = set(re.findall(r'<tr data-execution-id="([^"]+)"', page.text))
    assert listed == set(ids[:3])
    # The count is a dry run of the same selection: an id that is no dead letter of q1 is not counted.
    confirm = await open_ui.get("/ui/dead-letters/confirm", params=[("do", "retry-selected"), ("queue", "q1"),
                                                                     ("ids", ids[0]), ("ids", ids[3])])
    assert 'data-count="1"' in confirm.text
    done = await open_ui.post("/ui/dead-letters/retry", data={"csrf": csrf_of(confirm), "queue": "q1",
                                                              "ids": ids[0]})
    assert done.status_code == 303 and done.headers["location"] == "/ui/dead-letters?queue=q1"
    assert (await open_ui.get(f"/v1/executions/{ids[0]}")).json()["state"] == "ENQUEUED"
    every = await open_ui.get("/ui/dead-letters/confirm", params={"do": "delete-all", "queue": "q1"})
    assert 'data-count="2"' in every.text
    flash = await open_ui.post("/ui/dead-letters/delete", data={"csrf": csrf_of(every), "queue": "q1", "all": "1"},
                               follow_redirects=True)
    assert "Deleted 2 executions" in flash.text
    assert [(await open_ui.get(f"/v1/executions/{i}")).status_code for i in ids[1:3]] == [404, 404]
    assert (await open_ui.get(f"/v1/executions/{ids[3]}")).json()["state"] == "DEAD_LETTER"


# --- CSRF ----------------------------------------------------------------------------------------

async def test_a_form_without_its_csrf_token_or_with_a_wrong_one_is_refused(open_ui):
    await enqueue(open_ui, queue="mail")
    page = await open_ui.get("/ui")
    assert (await open_ui.post("/ui/queues/mail/pause", data={})).status_code == 403
    assert (await open_ui.post("/ui/queues/mail/pause", data={"csrf": "x" + csrf_of(page)})).status_code == 403
    stranger = httpx.AsyncClient(base_url=str(open_ui.base_url))
    async with stranger:  # another browser's token is not this one's
        assert (await stranger.post("/ui/queues/mail/pause", data={"csrf": csrf_of(page)})).status_code == 403
    queues = (await open_ui.get("/v1/queues")).json()
    assert not any(q["paused"] for q in queues["items"])
    ok = await open_ui.post("/ui/queues/mail/pause", data={"csrf": csrf_of(page)})
    assert ok.status_code == 303
    assert [q["paused"] for q in (await open_ui.get("/v1/queues")).json()["items"] if q["name"] == "mail"] == [True]
    page = await open_ui.get("/ui")
    assert 'data-action="resume"' in page.text and "Queue mail paused." in page.text


# --- sign-in -------------------------------------------------------------------------------------

async def test_with_keys_the_dashboard_asks_for_one_and_keeps_a_strict_http_only_session(keyed):
    response = await keyed.get("/ui/executions?state=ENQUEUED", follow_redirects=False)
    assert response.status_code == 303
    assert response.headers["location"] == "/ui/sign-in?next=%2Fui%2Fexecutions%3Fstate%3DENQUEUED"
    wrong = await sign_in(keyed, "nope")
    assert wrong.status_code == 401 and "not an API key" in wrong.text
    done = await sign_in(keyed, "boot", "/ui/executions?state=ENQUEUED")
    assert done.status_code == 303 and done.headers["location"] == "/ui/executions?state=ENQUEUED"
    cookie = done.headers["set-cookie"]
    assert "jobwire_session=" in cookie and "HttpOnly" in cookie and "SameSite=strict" in cookie
    assert "Path=/ui" in cookie and "boot" not in cookie.split(";")[0]
    page = await keyed.get("/ui")
    assert page.status_code == 200 and "Sign out" in page.text
    out = await keyed.post("/ui/sign-out", data={"csrf": csrf_of(page)})
    assert out.status_code == 303
    assert (await keyed.get("/ui", follow_redirects=False)).status_code == 303


async def test_a_sign_in_without_its_csrf_token_is_refused(keyed):
    await keyed.get("/ui/sign-in")
    assert (await keyed.post("/ui/sign-in", data={"key": "boot"})).status_code == 403


async def test_the_v1_routes_never_accept_the_session_cookie(keyed):
    await sign_in(keyed, "boot")
    session = keyed.cookies.get("jobwire_session")
    assert session
    for path in ("/v1/executions", "/v1/queues"):
        response = await keyed.get(path, headers={"cookie": f"jobwire_session={session}"})
        assert response.status_code == 401, response.text
    assert (await keyed.post("/v1/queues/default/pause", headers={"cookie": f"jobwire_session={session}"})
            ).status_code == 401


async def test_a_read_key_sees_the_buttons_disabled_and_its_posts_are_refused(keyed):
    created = await keyed.post("/v1/api-keys", json={"name": "viewer", "scopes": ["read"]}, headers=BOOT)
    assert created.status_code == 201, created.text
    execution_id = await enqueue(keyed, headers=BOOT, queue="mail")
    assert (await sign_in(keyed, created.json()["key"])).status_code == 303
    page = await keyed.get("/ui")
    assert "viewer" in page.text and "read only" in page.text
    button = re.search(r'<button[^>]*data-action="pause"[^>]*>', page.text, re.S)
    assert button and "disabled" in button.group(0)
    refused = await keyed.post("/ui/queues/mail/pause", data={"csrf": csrf_of(page)})
    assert refused.status_code == 403 and "lacks scope operate" in refused.text
    execution = await keyed.get(f"/ui/executions/{execution_id}")
    cancel = re.search(r'<button[^>]*data-action="cancel"[^>]*>', execution.text, re.S)
    assert cancel and "disabled" in cancel.group(0)
    assert (await keyed.post(f"/ui/executions/{execution_id}/cancel", data={"csrf": csrf_of(execution)})
            ).status_code == 403
    # The session ends with its key.
    deleted = await keyed.delete(f"/v1/api-keys/{created.json()['id']}", headers=BOOT)
    assert deleted.status_code == 204
    assert (await keyed.get("/ui", follow_redirects=False)).status_code == 303


async def test_a_key_that_cannot_read_cannot_sign_in(keyed):
    created = await keyed.post("/v1/api-keys", json={"name": "producer", "scopes": ["enqueue"]}, headers=BOOT)
    assert (await sign_in(keyed, created.json()["key"])).status_code == 401


async def test_a_tampered_or_foreign_session_cookie_is_not_a_session(keyed):
    await sign_in(keyed, "boot")
    session = keyed.cookies.get("jobwire_session")
    body, mac = session.split(".")
    keyed.cookies.clear()
    for forged in (body + "." + mac[::-1], body[:-2] + "AA." + mac, "x.y", ""):
        keyed.cookies.set("jobwire_session", forged, path="/ui")
        assert (await keyed.get("/ui", follow_redirects=False)).status_code == 303
