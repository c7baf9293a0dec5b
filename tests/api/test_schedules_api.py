"""Schedules over HTTP (DESIGN §4, §6.3): idempotent upsert, list, show, delete, trigger, preview,
and 422s that name the field and the reason."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import datetime

import httpx
import pytest

from app.db.database import Database
from tests.conftest import RunningServer, register

PROBLEM = "application/problem+json"


@pytest.fixture
async def api(api_only_server: RunningServer, db: Database) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=api_only_server.url, timeout=10) as client:
        await register(client, "report", "http://127.0.0.1:9/report")
        yield client


def fields(response: httpx.Response, status: int = 422) -> dict[str, str]:
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == PROBLEM
    return {e["field"]: e["message"] for e in response.json().get("errors", [])}


DAILY = {"cron": "0 0 8 * * *", "timezone": "Europe/Berlin", "handler": "report"}


async def test_put_creates_then_an_identical_redeclaration_changes_nothing(api):
    created = await api.put("/v1/schedules/daily-report", json={**DAILY, "metadata": {"context": {"team": "x"}}})
    assert created.status_code == 201, created.text
    body = created.json()
    assert body["job_id"] == "daily-report" and body["cron"] == "0 0 8 * * *"
    assert (body["execution_mode"], body["overlap_policy"], body["misfire_policy"]) == (
        "SINGLE_INSTANCE", "SKIP", "FIRE_ONCE")
    assert (body["consecutive_failures"], body["last_fired_at"], body["last_success_at"],
            body["last_failure_at"]) == (0, None, None, None)
    assert body["metadata"] == {"context": {"team": "x"}} and body["tracked"] is True
    next_fire = datetime.fromisoformat(body["next_fire_at"])
    assert next_fire.hour in (6, 7) and next_fire.minute == 0  # 08:00 Berlin is 06:00 or 07:00 UTC

    again = await api.put("/v1/schedules/daily-report", json={**DAILY, "metadata": {"context": {"team": "x"}}})
    assert again.status_code == 200
    assert again.json() == body  # updated_at and next_fire_at unchanged: a deploy may re-declare


async def test_put_replaces_the_whole_definition(api):
    await api.put("/v1/schedules/s1", json={**DAILY, "payload": {"a": 1}, "priority": 5})
    replaced = await api.put("/v1/schedules/s1", json={"cron": "*/5 * * * *", "handler": "report"})
    assert replaced.status_code == 200
    body = replaced.json()
    assert (body["cron"], body["timezone"], body["payload"], body["priority"]) == ("*/5 * * * *", "UTC", None, 0)
    assert body["updated_at"] > body["created_at"]
    assert datetime.fromisoformat(body["next_fire_at"]).minute % 5 == 0


async def test_list_show_delete(api):
    for name in ("b", "a"):
        assert (await api.put(f"/v1/schedules/{name}", json=DAILY)).status_code == 201
    listing = await api.get("/v1/schedules")
    assert [s["job_id"] for s in listing.json()["items"]] == ["a", "b"]
    assert (await api.get("/v1/schedules/a")).json()["job_id"] == "a"
    assert (await api.delete("/v1/schedules/a")).status_code == 204
    assert (await api.get("/v1/schedules/a")).status_code == 404
    assert (await api.delete("/v1/schedules/a")).status_code == 404
    assert [s["job_id"] for s in (await api.get("/v1/schedules")).json()["items"]] == ["b"]


async def test_a_disabled_schedule_has_no_next_fire(api):
    body = (await api.put("/v1/schedules/off", json={**DAILY, "enabled": False})).json()
    assert body["enabled"] is False and body["next_fire_at"] is None


async def test_trigger_fires_once_now_as_a_cron_execution(api):
    await api.put("/v1/schedules/t", json={**DAILY, "payload": {"p": 1}, "metadata": {"context": {"k": "v"}}})
    fired = await api.post("/v1/schedules/t/trigger")
    assert fired.status_code == 201, fired.text
    e = fired.json()
    assert (e["job_id"], e["job_type"], e["state"], e["handler"]) == ("t", "CRON", "ENQUEUED", "report")
    assert e["payload"] == {"p": 1} and e["metadata"] == {"context": {"k": "v"}}
    second = await api.post("/v1/schedules/t/trigger")  # exempt from overlap: the first is still ENQUEUED
    assert second.status_code == 201
    shown = (await api.get("/v1/schedules/t")).json()
    assert shown["last_fired_at"] == second.json()["scheduled_at"]
    assert (await api.post("/v1/schedules/nope/trigger")).status_code == 404


async def test_preview_lists_the_next_instants_with_dst_resolved(api):
    await api.put("/v1/schedules/p", json={"cron": "0 30 2 * * *", "timezone": "America/New_York",
                                           "handler": "report"})
    preview = await api.get("/v1/schedules/p/preview", params={"count": 3})
    assert preview.status_code == 200
    items = [datetime.fromisoformat(t) for t in preview.json()["items"]]
    assert len(items) == 3 and items == sorted(items)
    assert all(t.utcoffset().total_seconds() == 0 for t in items)
    assert all((t.hour, t.minute) in ((6, 30), (7, 30), (7, 0)) for t in items)
    assert len((await api.get("/v1/schedules/p/preview")).json()["items"]) == 10
    assert "count" in fields(await api.get("/v1/schedules/p/preview", params={"count": 0}))
    assert "count" in fields(await api.get("/v1/schedules/p/preview", params={"count": 101}))
    assert (await api.get("/v1/schedules/nope/preview")).status_code == 404


@pytest.mark.parametrize(("change", "field", "reason"), [
    ({"cron": "0 0 L * *"}, "cron", "Quartz syntax 'L'"),
    ({"cron": "0 0 ? * *"}, "cron", "Quartz syntax '?'"),
    ({"cron": "0 0 * * 1#2"}, "cron", "Quartz syntax '#'"),
    ({"cron": "0 0 15W * *"}, "cron", "Quartz syntax"),
    ({"cron": "not a cron"}, "cron", "expected 5 or 6 fields"),
    ({"cron": "0 61 * * * *"}, "cron", "61 is outside 0-59"),
    ({"timezone": "Mars/Olympus"}, "timezone", "unknown time zone"),
    ({"handler": "ghost"}, "handler", "no handler named 'ghost'"),
    ({"execution_mode": "SOMETIMES"}, "execution_mode", ""),
    ({"overlap_policy": "QUEUE_ALL"}, "overlap_policy", ""),
    ({"misfire_policy": "FLOOD"}, "misfire_policy", ""),
    ({"max_attempts": 0}, "max_attempts", ""),
    ({"cron": 5}, "cron", ""),
    ({"colour": "red"}, "colour", ""),
])
async def test_bad_definitions_are_refused_naming_the_field(api, change, field, reason):
    got = fields(await api.put("/v1/schedules/bad", json={**DAILY, **change}))
    assert field in got, got
    assert reason in got[field]
    assert (await api.get("/v1/schedules/bad")).status_code == 404


async def test_bad_cron_and_zone_are_both_named(api):
    got = fields(await api.put("/v1/schedules/bad", json={**DAILY, "cron": "L", "timezone": "Nowhere"}))
    assert set(got) == {"cron", "timezone"}


async def test_a_bad_job_id_is_refused(api):
    assert "job_id" in fields(await api.put("/v1/schedules/%20bad", json=DAILY))


async def test_a_handler_used_by_a_schedule_cannot_be_deleted(api):
    await api.put("/v1/schedules/uses", json=DAILY)
    assert (await api.delete("/v1/handlers/report")).status_code == 409
    await api.delete("/v1/schedules/uses")
    assert (await api.delete("/v1/handlers/report")).status_code == 204
