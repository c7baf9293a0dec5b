"""Bootstrap API keys (JOBWIRE_API_KEYS, every scope) guard the management routes only (DESIGN §4):
health, readiness and the OpenAPI document are open, and callback routes answer to the callback
token alone. Database keys, their scopes and queues: tests/api/test_scoped_keys.py."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import httpx
import pytest
from aiohttp import web

from app.api.app import create_api
from app.api.auth import ManagementRoute
from app.db.database import Database
from tests.api_contract import api_routes
from tests.conftest import HandlerServer, RunningServer, settings_for, start_server

PROBLEM = "application/problem+json"
KEYS = {"k1": {"authorization": "Bearer k1"}, "k2": {"authorization": "Bearer k2"}}
NOWHERE = "http://127.0.0.1:9/jobs"
SOME_ID = "00000000-0000-4000-8000-000000000000"

MANAGEMENT = [
    ("GET", "/v1/handlers", None),
    ("GET", "/v1/handlers/h", None),
    ("PUT", "/v1/handlers/h", {"url": NOWHERE}),
    ("DELETE", "/v1/handlers/h", None),
    ("POST", "/v1/jobs", {"handler": "h"}),
    ("POST", "/v1/jobs/batch", {"jobs": [{"handler": "h"}]}),
    ("GET", "/v1/executions", None),
    ("GET", f"/v1/executions/{SOME_ID}", None),
    ("POST", f"/v1/executions/{SOME_ID}/cancel", None),
    ("POST", f"/v1/executions/{SOME_ID}/retry", None),
]


def assert_unauthorized(response: httpx.Response) -> None:
    assert response.status_code == 401, response.text
    assert response.headers["content-type"] == PROBLEM
    assert response.headers["www-authenticate"] == "Bearer"
    assert response.json()["status"] == 401


@pytest.fixture(scope="module")
async def keyed_server(database_url: str) -> AsyncIterator[RunningServer]:
    """The API with keys k1 and k2, shared by the module (a start per test would dominate the run)."""
    server = await start_server(settings_for(database_url, api_keys=["k1", "k2"]), background=False)
    yield server
    await server.stop()


@pytest.fixture
async def keyed(keyed_server: RunningServer, db: Database) -> AsyncIterator[httpx.AsyncClient]:
    """A client that sends no key by itself; `db` empties the tables before each test."""
    async with httpx.AsyncClient(base_url=keyed_server.url, timeout=10) as client:
        yield client


@pytest.mark.parametrize(("method", "path", "body"), MANAGEMENT, ids=[f"{m} {p}" for m, p, _ in MANAGEMENT])
async def test_management_route_without_a_key_is_401(
        keyed: httpx.AsyncClient, method: str, path: str, body: Any) -> None:
    assert_unauthorized(await keyed.request(method, path, json=body))


@pytest.mark.parametrize("authorization", [
    "Bearer k3",
    "Bearer K1",
    "Bearer k1k2",
    "Bearer",
    "Basic k1",
    "k1",
    "Bearer\tk1",
])
async def test_wrong_key_is_401(keyed: httpx.AsyncClient, authorization: str) -> None:
    assert_unauthorized(await keyed.get("/v1/executions", headers={"authorization": authorization}))


async def test_key_with_non_ascii_bytes_is_401(keyed: httpx.AsyncClient) -> None:
    response = await keyed.get("/v1/executions", headers={"authorization": b"Bearer k\xb9"})
    assert_unauthorized(response)


async def test_every_configured_key_opens_the_management_routes(keyed: httpx.AsyncClient) -> None:
    created = await keyed.put("/v1/handlers/h", json={"url": NOWHERE}, headers=KEYS["k1"])
    assert created.status_code == 201, created.text
    shown = await keyed.get("/v1/handlers/h", headers=KEYS["k2"])
    assert shown.status_code == 200 and shown.json()["url"] == NOWHERE
    enqueued = await keyed.post("/v1/jobs", json={"handler": "h", "run_at": "2999-01-01T00:00:00Z"},
                                headers={"authorization": "bearer k2"})
    assert enqueued.status_code == 201, enqueued.text
    listing = await keyed.get("/v1/executions", headers=KEYS["k1"])
    assert [e["id"] for e in listing.json()["items"]] == [enqueued.json()["id"]]


async def test_a_refused_request_changes_nothing(keyed: httpx.AsyncClient) -> None:
    assert_unauthorized(await keyed.put("/v1/handlers/h", json={"url": NOWHERE}))
    assert_unauthorized(await keyed.put("/v1/handlers/h", json={"url": NOWHERE}, headers={"authorization": "Bearer x"}))
    assert (await keyed.get("/v1/handlers/h", headers=KEYS["k1"])).status_code == 404


@pytest.mark.parametrize("raw", [b"{not json", b'{"handler": NaN}', b'{"handler": "h", "colour": 1}'])
async def test_missing_key_is_401_before_the_body_is_looked_at(keyed: httpx.AsyncClient, raw: bytes) -> None:
    response = await keyed.post("/v1/jobs", content=raw, headers={"content-type": "application/json"})
    assert_unauthorized(response)


@pytest.mark.parametrize("path", ["/healthz", "/readyz", "/openapi.json"])
async def test_health_readiness_and_openapi_need_no_key(keyed: httpx.AsyncClient, path: str) -> None:
    response = await keyed.get(path)
    assert response.status_code == 200, response.text


async def test_without_any_key_management_routes_are_open(api: httpx.AsyncClient) -> None:
    # No bootstrap key and no database key: open (whatever credentials a request sends).
    assert (await api.get("/v1/executions")).status_code == 200
    assert (await api.get("/v1/handlers", headers={"authorization": "Bearer anything"})).status_code == 200


async def test_the_last_admin_key_cannot_be_deleted_without_a_bootstrap_key(
        api_only_server: RunningServer, db: Database) -> None:
    """No bootstrap key: deleting the last key with scope admin is 409 while other keys remain, and
    leaves it working (the API stays manageable)."""
    async with httpx.AsyncClient(base_url=api_only_server.url, timeout=10) as client:
        created = await client.post("/v1/api-keys", json={"name": "admin", "scopes": ["admin"]})  # open: the first
        admin = {"authorization": f"Bearer {created.json()['key']}"}
        reader = await client.post("/v1/api-keys", json={"name": "reader", "scopes": ["read"]}, headers=admin)
        assert reader.status_code == 201, reader.text
        refused = await client.delete(f"/v1/api-keys/{created.json()['id']}", headers=admin)
        assert refused.status_code == 409 and refused.headers["content-type"] == PROBLEM
        assert "last API key with scope admin" in refused.json()["detail"]
        listed = await client.get("/v1/api-keys", headers=admin)
        assert [k["name"] for k in listed.json()["items"]] == ["admin", "reader"]


# --- callbacks answer to the callback token, never to API keys ----------------------------

async def accept_later(_: web.Request, __: dict[str, Any]) -> web.StreamResponse:
    return web.Response(status=202)


@pytest.fixture
async def dispatching(jobwire: Callable[..., Awaitable[RunningServer]]) -> AsyncIterator[httpx.AsyncClient]:
    """A server of its own with keys k1 and k2 and a running dispatcher."""
    server = await jobwire(api_keys=["k1", "k2"])
    async with httpx.AsyncClient(base_url=server.url, timeout=10) as client:
        yield client


async def accepted_execution(client: httpx.AsyncClient, handler: HandlerServer) -> tuple[str, str]:
    """An execution its handler accepted (202); returns (id, callback token)."""
    url = handler.route("/later", accept_later)
    assert (await client.put("/v1/handlers/later", json={"url": url}, headers=KEYS["k1"])).status_code == 201
    response = await client.post("/v1/jobs", json={"handler": "later"}, headers=KEYS["k1"])
    assert response.status_code == 201, response.text
    await handler.wait_for(1)
    job = handler.received[0]
    assert job["execution_id"] == response.json()["id"]
    return job["execution_id"], job["callback"]["token"]


async def test_callback_without_a_token_is_401_even_with_a_valid_api_key(
        dispatching: httpx.AsyncClient, handler: HandlerServer) -> None:
    execution_id, _ = await accepted_execution(dispatching, handler)
    complete = f"/v1/executions/{execution_id}/complete"
    no_credentials = await dispatching.post(complete, json={"outcome": "succeeded"})
    assert no_credentials.status_code == 401
    assert no_credentials.headers["content-type"] == PROBLEM
    assert "callback token" in no_credentials.json()["detail"]
    # An API key is not a callback token: in the token's place it is a bad token (403).
    api_key = await dispatching.post(complete, json={"outcome": "succeeded"}, headers=KEYS["k1"])
    assert api_key.status_code == 403, api_key.text
    assert api_key.headers["content-type"] == PROBLEM
    shown = await dispatching.get(f"/v1/executions/{execution_id}", headers=KEYS["k1"])
    assert shown.json()["state"] == "PROCESSING"


async def test_callback_with_its_token_and_no_api_key_succeeds(
        dispatching: httpx.AsyncClient, handler: HandlerServer) -> None:
    execution_id, token = await accepted_execution(dispatching, handler)
    response = await dispatching.post(f"/v1/executions/{execution_id}/complete",
                                      json={"outcome": "succeeded", "result": {"ok": True}},
                                      headers={"authorization": f"Bearer {token}"})
    assert response.status_code == 200, response.text
    assert response.json()["state"] == "SUCCEEDED"
    assert response.json()["result"] == {"ok": True}
    shown = await dispatching.get(f"/v1/executions/{execution_id}", headers=KEYS["k2"])
    assert shown.json()["state"] == "SUCCEEDED"


@pytest.mark.parametrize("token", [
    b"abc", b"0.", b".abc", b"-1.abc", b"1.abc", b"0.abc", b"99999999999999999999.abc", b"0.\xe9",
    b"\xb2.abc", b"\xb9.abc",  # superscript digits: str.isdigit() says yes, int() says no
])
async def test_malformed_callback_tokens_are_403_not_500(keyed: httpx.AsyncClient, token: bytes) -> None:
    response = await keyed.post(f"/v1/executions/{uuid.uuid4()}/complete", json={"outcome": "succeeded"},
                                headers={"authorization": b"Bearer " + token})
    assert response.status_code == 403, response.text
    assert response.headers["content-type"] == PROBLEM


def test_every_management_route_checks_the_key_before_its_body() -> None:
    # The key is checked in one place, ManagementRoute: a route of another class would be open.
    routes = api_routes(create_api(max_request_bytes=1))
    management = [r for r in routes if r.path.startswith("/v1/") and "callbacks" not in r.tags]
    assert len(management) >= 20
    assert [r.path for r in management if not isinstance(r.original_route, ManagementRoute)] == []
    assert not any(isinstance(r.original_route, ManagementRoute) for r in routes if r not in management)
