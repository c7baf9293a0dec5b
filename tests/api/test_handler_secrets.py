"""A handler's signing secrets over HTTP: POST /v1/handlers/{name}/secrets adds one (201, its value
shown once), DELETE …/secrets/{id} retires one (204; 409 for the last that does not expire), GET
lists them without their values, `expire_others_after_seconds` retires the others on its own."""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta

import httpx
import pytest

from app.db.database import Database
from tests.conftest import problem_fields, scalar, sql

NOWHERE = "http://127.0.0.1:9/jobs"  # nothing listens on the discard port


async def create(api: httpx.AsyncClient, name: str = "h") -> dict:
    response = await api.put(f"/v1/handlers/{name}", json={"url": NOWHERE})
    assert response.status_code == 201, response.text
    return response.json()


async def add_secret(api: httpx.AsyncClient, name: str = "h", **body: object) -> dict:
    response = await api.post(f"/v1/handlers/{name}/secrets", json=body if body else None)
    assert response.status_code == 201, response.text
    return response.json()


async def listed(api: httpx.AsyncClient, name: str = "h") -> list[dict]:
    response = await api.get(f"/v1/handlers/{name}")
    assert response.status_code == 200, response.text
    assert "whsec_" not in response.text and "jwenc1:" not in response.text
    return response.json()["secrets"]


async def test_a_created_handler_lists_its_first_secret_and_an_update_keeps_it(api: httpx.AsyncClient) -> None:
    created = await create(api)
    assert created["secret"].startswith("whsec_")
    [first] = created["secrets"]
    assert set(first) == {"id", "created_at", "expires_at"} and first["expires_at"] is None
    updated = (await api.put("/v1/handlers/h", json={"url": NOWHERE + "/v2"})).json()
    assert updated.get("secret") is None and updated["secrets"] == [first]
    assert await listed(api) == [first]


async def test_post_adds_a_secret_shown_once_and_both_are_listed_newest_first(api: httpx.AsyncClient) -> None:
    created = await create(api)
    response = await api.post("/v1/handlers/h/secrets")  # no body at all
    assert response.status_code == 201, response.text
    added = response.json()
    assert set(added) == {"id", "secret", "created_at"}
    assert added["secret"].startswith("whsec_") and added["secret"] != created["secret"]
    uuid.UUID(added["id"])
    assert [s["id"] for s in await listed(api)] == [added["id"], created["secrets"][0]["id"]]
    assert all(s["expires_at"] is None for s in await listed(api))
    listing = await api.get("/v1/handlers")
    assert [s["id"] for s in listing.json()["items"][0]["secrets"]] == [added["id"], created["secrets"][0]["id"]]
    assert "whsec_" not in listing.text


async def test_an_empty_object_body_adds_a_secret_without_expiring_the_others(api: httpx.AsyncClient) -> None:
    await create(api)
    await add_secret(api, expire_others_after_seconds=None)
    response = await api.post("/v1/handlers/h/secrets", json={})
    assert response.status_code == 201, response.text
    assert len(await listed(api)) == 3 and all(s["expires_at"] is None for s in await listed(api))


async def test_delete_retires_a_secret_at_once(api: httpx.AsyncClient) -> None:
    old = (await create(api))["secrets"][0]
    new = await add_secret(api)
    response = await api.delete(f"/v1/handlers/h/secrets/{old['id']}")
    assert response.status_code == 204 and response.content == b""
    assert [s["id"] for s in await listed(api)] == [new["id"]]
    problem_fields(await api.delete(f"/v1/handlers/h/secrets/{old['id']}"), 404)


async def test_the_last_secret_cannot_be_deleted(api: httpx.AsyncClient) -> None:
    only = (await create(api))["secrets"][0]
    response = await api.delete(f"/v1/handlers/h/secrets/{only['id']}")
    problem_fields(response, 409)
    assert "last secret" in response.json()["detail"]
    assert await listed(api) == [only]


async def test_expire_others_after_seconds_schedules_their_expiry_and_not_the_new_ones(
        api: httpx.AsyncClient) -> None:
    old = (await create(api))["secrets"][0]
    new = await add_secret(api, expire_others_after_seconds=3600)
    by_id = {s["id"]: s for s in await listed(api)}
    assert by_id[new["id"]]["expires_at"] is None
    expires = datetime.fromisoformat(by_id[old["id"]]["expires_at"])
    assert timedelta(minutes=59) < expires - datetime.fromisoformat(new["created_at"]) <= timedelta(hours=1)
    # An earlier expiry is kept: a longer window later does not extend it.
    await add_secret(api, expire_others_after_seconds=7200)
    assert {s["id"]: s for s in await listed(api)}[old["id"]]["expires_at"] == by_id[old["id"]]["expires_at"]


async def test_an_expiring_secret_can_be_deleted_but_not_the_last_one_that_does_not_expire(
        api: httpx.AsyncClient) -> None:
    old = (await create(api))["secrets"][0]
    new = await add_secret(api, expire_others_after_seconds=3600)
    # Deleting the new one would leave only the expiring one: after the hour, none would sign.
    problem_fields(await api.delete(f"/v1/handlers/h/secrets/{new['id']}"), 409)
    assert (await api.delete(f"/v1/handlers/h/secrets/{old['id']}")).status_code == 204
    assert [s["id"] for s in await listed(api)] == [new["id"]]


async def test_expired_secrets_are_not_listed_and_go_with_the_next_rotation(
        api: httpx.AsyncClient, db: Database) -> None:
    old = (await create(api))["secrets"][0]
    new = await add_secret(api, expire_others_after_seconds=0)
    assert [s["id"] for s in await listed(api)] == [new["id"]]
    assert await scalar(db, "SELECT count(*) FROM job_handler_secrets WHERE handler = 'h'") == 2
    newest = await add_secret(api)
    assert await scalar(db, "SELECT count(*) FROM job_handler_secrets WHERE id = :id", id=uuid.UUID(old["id"])) == 0
    assert [s["id"] for s in await listed(api)] == [newest["id"], new["id"]]


async def test_a_handler_holds_at_most_ten_active_secrets(api: httpx.AsyncClient) -> None:
    await create(api)
    for _ in range(9):
        await add_secret(api)
    response = await api.post("/v1/handlers/h/secrets")
    problem_fields(response, 409)
    assert "10 active secrets" in response.json()["detail"]
    assert len(await listed(api)) == 10


async def test_secrets_of_an_unknown_handler_are_404(api: httpx.AsyncClient) -> None:
    response = await api.post("/v1/handlers/nobody/secrets")
    problem_fields(response, 404)
    assert "nobody" in response.json()["detail"]
    problem_fields(await api.delete(f"/v1/handlers/nobody/secrets/{uuid.uuid4()}"), 404)


async def test_an_unknown_secret_id_or_another_handlers_is_404(api: httpx.AsyncClient) -> None:
    await create(api, "a")
    theirs = (await create(api, "b"))["secrets"][0]
    problem_fields(await api.delete(f"/v1/handlers/a/secrets/{uuid.uuid4()}"), 404)
    problem_fields(await api.delete(f"/v1/handlers/a/secrets/{theirs['id']}"), 404)
    assert [s["id"] for s in await listed(api, "b")] == [theirs["id"]]


async def test_a_secret_id_that_is_no_uuid_is_422_naming_it(api: httpx.AsyncClient) -> None:
    await create(api)
    assert problem_fields(await api.delete("/v1/handlers/h/secrets/not-a-uuid"), 422) == ["secret_id"]


@pytest.mark.parametrize("body", [
    pytest.param({"expire_others_after_seconds": -1}, id="negative"),
    pytest.param({"expire_others_after_seconds": "60"}, id="string"),
    pytest.param({"expire_others_after_seconds": True}, id="bool"),
    pytest.param({"expire_others_after_seconds": 1e12}, id="too-long"),
    pytest.param({"expire_others_after_seconds": 60, "secret": "whsec_mine"}, id="secret-not-settable"),
    pytest.param([], id="not-an-object"),
])
async def test_a_bad_rotation_body_is_422_and_adds_nothing(api: httpx.AsyncClient, body: object) -> None:
    await create(api)
    assert problem_fields(await api.post("/v1/handlers/h/secrets", json=body), 422)
    assert len(await listed(api)) == 1


async def test_deleting_the_handler_removes_its_secrets(api: httpx.AsyncClient, db: Database) -> None:
    await create(api)
    await add_secret(api)
    assert await scalar(db, "SELECT count(*) FROM job_handler_secrets WHERE handler = 'h'") == 2
    assert (await api.delete("/v1/handlers/h")).status_code == 204
    assert await scalar(db, "SELECT count(*) FROM job_handler_secrets WHERE handler = 'h'") == 0
    # A handler created again under the name starts with one new secret.
    assert len((await create(api))["secrets"]) == 1


async def test_without_a_secret_key_secrets_are_stored_as_whsec(api: httpx.AsyncClient, db: Database) -> None:
    secret = (await create(api))["secret"]
    added = await add_secret(api)
    stored = {r["secret"] for r in await sql(db, "SELECT secret FROM job_handler_secrets WHERE handler = 'h'")}
    assert stored == {secret, added["secret"]}
    assert await scalar(db, "SELECT secret FROM job_handlers WHERE name = 'h'") is None  # deprecated: never written
