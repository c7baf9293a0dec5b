"""Handler registration over HTTP (DESIGN §4): PUT creates or updates, the signing secret is
shown once, DELETE refuses while work still needs the handler."""

from __future__ import annotations

import base64
from datetime import datetime

import httpx
import pytest
from standardwebhooks import Webhook

from tests.conftest import HandlerServer, problem_fields

PROBLEM = "application/problem+json"
NOWHERE = "http://127.0.0.1:9/jobs"  # nothing listens on the discard port
FAR_FUTURE = "2999-01-01T00:00:00Z"


async def test_put_of_a_new_handler_is_201_with_a_whsec_secret(api: httpx.AsyncClient) -> None:
    response = await api.put("/v1/handlers/emails", json={"url": "http://mailer.internal/jobs",
                                                           "timeout_seconds": 30, "max_concurrency": 4,
                                                           "stateful": True})
    assert response.status_code == 201, response.text
    body = response.json()
    assert body["name"] == "emails"
    assert body["url"] == "http://mailer.internal/jobs"
    assert body["timeout_seconds"] == 30 and body["max_concurrency"] == 4 and body["stateful"] is True
    assert body["secret"].startswith("whsec_")
    assert len(base64.b64decode(body["secret"].removeprefix("whsec_"), validate=True)) >= 24
    assert datetime.fromisoformat(body["created_at"]) == datetime.fromisoformat(body["updated_at"])


async def test_optional_handler_fields_default_when_omitted(api: httpx.AsyncClient) -> None:
    body = (await api.put("/v1/handlers/plain", json={"url": "https://example.com/hook"})).json()
    assert body["timeout_seconds"] is None and body["max_concurrency"] is None and body["stateful"] is False


async def test_batch_is_shown_as_set_and_null_turns_it_off(api: httpx.AsyncClient) -> None:
    created = (await api.put("/v1/handlers/bulk", json={"url": NOWHERE, "batch": {"max_size": 50}})).json()
    assert created["batch"] == {"max_size": 50, "max_wait_ms": 0}
    await api.put("/v1/handlers/bulk", json={"url": NOWHERE, "batch": {"max_size": 500, "max_wait_ms": 1000}})
    assert (await api.get("/v1/handlers/bulk")).json()["batch"] == {"max_size": 500, "max_wait_ms": 1000}
    assert (await api.put("/v1/handlers/bulk", json={"url": NOWHERE, "batch": None})).json()["batch"] is None
    await api.put("/v1/handlers/bulk", json={"url": NOWHERE, "batch": {"max_size": 1}})
    assert (await api.put("/v1/handlers/bulk", json={"url": NOWHERE})).json()["batch"] is None  # absent: off
    assert (await api.get("/v1/handlers")).json()["items"][0]["batch"] is None


async def test_second_put_is_200_without_a_secret_and_updates_the_url(api: httpx.AsyncClient) -> None:
    first = (await api.put("/v1/handlers/h", json={"url": NOWHERE})).json()
    second = await api.put("/v1/handlers/h", json={"url": "http://127.0.0.1:9/v2", "timeout_seconds": 5})
    assert second.status_code == 200, second.text
    body = second.json()
    assert "secret" not in body or body["secret"] is None
    assert body["url"] == "http://127.0.0.1:9/v2" and body["timeout_seconds"] == 5
    assert body["created_at"] == first["created_at"]
    assert datetime.fromisoformat(body["updated_at"]) >= datetime.fromisoformat(first["updated_at"])
    shown = (await api.get("/v1/handlers/h")).json()
    assert shown["url"] == "http://127.0.0.1:9/v2"


async def test_update_keeps_the_signing_secret(api: httpx.AsyncClient, handler: HandlerServer) -> None:
    secret = (await api.put("/v1/handlers/h", json={"url": NOWHERE})).json()["secret"]
    await api.put("/v1/handlers/h", json={"url": handler.url + "/moved"})
    response = await api.post("/v1/jobs", json={"handler": "h", "payload": {"n": 1}})
    assert response.status_code == 201, response.text
    await handler.wait_for(1)
    Webhook(secret).verify(handler.bodies[0], {k.lower(): v for k, v in handler.headers[0].items()})


async def test_get_never_shows_the_secret(api: httpx.AsyncClient) -> None:
    await api.put("/v1/handlers/h", json={"url": NOWHERE})
    shown = await api.get("/v1/handlers/h")
    assert shown.status_code == 200
    assert shown.json().get("secret") is None
    assert "whsec_" not in shown.text


async def test_list_shows_every_handler_by_name_without_secrets(api: httpx.AsyncClient) -> None:
    assert (await api.get("/v1/handlers")).json() == {"items": []}
    for name in ("zeta", "alpha", "mid"):
        await api.put(f"/v1/handlers/{name}", json={"url": NOWHERE})
    listing = await api.get("/v1/handlers")
    assert listing.status_code == 200
    assert [h["name"] for h in listing.json()["items"]] == ["alpha", "mid", "zeta"]
    assert "whsec_" not in listing.text


async def test_delete_of_an_unused_handler_is_204_then_it_is_gone(api: httpx.AsyncClient) -> None:
    await api.put("/v1/handlers/h", json={"url": NOWHERE})
    response = await api.delete("/v1/handlers/h")
    assert response.status_code == 204
    assert response.content == b""
    problem_fields(await api.get("/v1/handlers/h"), 404)
    assert (await api.get("/v1/handlers")).json() == {"items": []}


async def test_delete_while_an_enqueued_job_uses_the_handler_is_409(api: httpx.AsyncClient) -> None:
    await api.put("/v1/handlers/h", json={"url": NOWHERE})
    job = (await api.post("/v1/jobs", json={"handler": "h", "run_at": FAR_FUTURE})).json()
    assert job["state"] == "ENQUEUED"
    problem_fields(await api.delete("/v1/handlers/h"), 409)
    assert (await api.get("/v1/handlers/h")).status_code == 200
    # Once nothing ENQUEUED or PROCESSING needs it, it can go.
    assert (await api.post(f"/v1/executions/{job['id']}/cancel")).status_code == 200
    assert (await api.delete("/v1/handlers/h")).status_code == 204


async def test_a_job_for_a_deleted_handler_is_422(api: httpx.AsyncClient) -> None:
    await api.put("/v1/handlers/h", json={"url": NOWHERE})
    assert (await api.delete("/v1/handlers/h")).status_code == 204
    assert problem_fields(await api.post("/v1/jobs", json={"handler": "h"}), 422) == ["handler"]


@pytest.mark.parametrize("method", ["GET", "DELETE"])
async def test_unknown_handler_is_404_problem(api: httpx.AsyncClient, method: str) -> None:
    response = await api.request(method, "/v1/handlers/nobody")
    problem_fields(response, 404)
    assert "nobody" in response.json()["detail"]


@pytest.mark.parametrize(("body", "field"), [
    pytest.param({"url": "ftp://files.example.com/x"}, "url", id="ftp-scheme"),
    pytest.param({"url": "not a url"}, "url", id="not-a-url"),
    pytest.param({"url": "http://"}, "url", id="no-host"),
    pytest.param({"url": "http://exa mple.com/"}, "url", id="space"),
    pytest.param({"url": ""}, "url", id="empty"),
    pytest.param({"url": 42}, "url", id="number"),
    pytest.param({"url": "http://x/" + "a" * 2048}, "url", id="too-long"),
    pytest.param({}, "url", id="missing"),
    pytest.param({"url": NOWHERE, "timeout_seconds": 0}, "timeout_seconds", id="timeout-zero"),
    pytest.param({"url": NOWHERE, "timeout_seconds": 7 * 86400 + 1}, "timeout_seconds", id="timeout-over-7-days"),
    pytest.param({"url": NOWHERE, "max_concurrency": 0}, "max_concurrency", id="concurrency-zero"),
    pytest.param({"url": NOWHERE, "max_concurrency": "4"}, "max_concurrency", id="concurrency-string"),
    pytest.param({"url": NOWHERE, "stateful": "yes"}, "stateful", id="stateful-string"),
    pytest.param({"url": NOWHERE, "secret": "whsec_mine"}, "secret", id="secret-not-settable"),
    pytest.param({"url": NOWHERE, "batch": {"max_size": 0}}, "batch.max_size", id="batch-size-zero"),
    pytest.param({"url": NOWHERE, "batch": {"max_size": 501}}, "batch.max_size", id="batch-size-over-500"),
    pytest.param({"url": NOWHERE, "batch": {"max_size": "5"}}, "batch.max_size", id="batch-size-string"),
    pytest.param({"url": NOWHERE, "batch": {}}, "batch.max_size", id="batch-size-missing"),
    pytest.param({"url": NOWHERE, "batch": {"max_size": 5, "max_wait_ms": -1}}, "batch.max_wait_ms",
                 id="batch-wait-negative"),
    pytest.param({"url": NOWHERE, "batch": {"max_size": 5, "max_wait_ms": 1001}}, "batch.max_wait_ms",
                 id="batch-wait-over-1000"),
    pytest.param({"url": NOWHERE, "batch": {"max_size": 5, "size": 2}}, "batch.size", id="batch-unknown-member"),
    pytest.param({"url": NOWHERE, "batch": 5}, "batch", id="batch-number"),
])
async def test_bad_handler_body_is_422_naming_the_field(
        api: httpx.AsyncClient, body: dict[str, object], field: str) -> None:
    assert field in problem_fields(await api.put("/v1/handlers/h", json=body), 422)
    assert (await api.get("/v1/handlers")).json() == {"items": []}


@pytest.mark.parametrize("name", ["-leading-dash", ".dot", "has%20space", "x" * 256, "%C3%A9t%C3%A9", "a%00b"])
@pytest.mark.parametrize("method", ["PUT", "GET", "DELETE"])
async def test_invalid_name_in_the_path_is_422_naming_name(api: httpx.AsyncClient, method: str, name: str) -> None:
    response = await api.request(method, f"/v1/handlers/{name}", json={"url": NOWHERE} if method == "PUT" else None)
    assert problem_fields(response, 422) == ["name"]
    assert (await api.get("/v1/handlers")).json() == {"items": []}


async def test_names_use_letters_digits_dot_underscore_colon_and_dash(api: httpx.AsyncClient) -> None:
    name = "Billing_v2.charge:retry-" + "x" * 231
    assert len(name) == 255
    response = await api.put(f"/v1/handlers/{name}", json={"url": NOWHERE})
    assert response.status_code == 201, response.text
    assert (await api.get(f"/v1/handlers/{name}")).json()["name"] == name


@pytest.mark.parametrize("raw", [b"", b"null", b"[]", b'{"url": NaN}', b'{"url": "http://x/\\u0000"}'])
async def test_odd_handler_bodies_are_422(api: httpx.AsyncClient, raw: bytes) -> None:
    response = await api.put("/v1/handlers/h", content=raw, headers={"content-type": "application/json"})
    assert problem_fields(response, 422)
    assert (await api.get("/v1/handlers")).json() == {"items": []}
