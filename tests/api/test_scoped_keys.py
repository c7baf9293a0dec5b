"""Scoped API keys (the security issue, item 5): every management route declares its scope, each
scope boundary holds on every route, queue-limited keys see and touch only their queues, and keys
kept in the database are shown once, stored as hashes, revoked on every node within 5 s."""

from __future__ import annotations

import asyncio
import hashlib
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import httpx
import pytest

from app.api.app import create_api
from app.api.auth import ManagementRoute
from app.domain.access import Scope, granted
from app.db.database import Database
from tests.api_contract import api_routes
from tests.conftest import PROBLEM, RunningServer, sql

BOOT = {"authorization": "Bearer boot"}
NOWHERE = "http://127.0.0.1:9/jobs"
LATER = "2999-01-01T00:00:00Z"  # never due: the API-only server claims nothing anyway
SOME_ID = "00000000-0000-4000-8000-000000000000"


def bearer(key: str) -> dict[str, str]:
    return {"authorization": f"Bearer {key}"}


def expected_scope(method: str, path: str) -> Scope:
    """The issue's rules: `read` every GET but the keys; `enqueue` POST /v1/jobs and /batch;
    `operate` the executions' and queues' actions; `admin` handlers, schedules and keys; and
    `admin` every subscription route, GETs included (issue 23: a subscription's deliveries show
    every event it receives). Workflows (issue 24): `enqueue` making one and adding jobs to it,
    `operate` its cancel and retry."""
    if path.startswith(("/v1/api-keys", "/v1/subscriptions")):
        return Scope.ADMIN
    if method == "GET":
        return Scope.READ
    if path.startswith("/v1/jobs") or path in ("/v1/workflows", "/v1/workflows/{workflow_id}/jobs"):
        return Scope.ENQUEUE
    if path.startswith(("/v1/executions", "/v1/queues", "/v1/workflows", "/v1/handlers/{name}/keys/")):
        return Scope.OPERATE  # pausing one key of a handler is an operator's act, as pausing a queue
    assert path.startswith(("/v1/handlers", "/v1/schedules")), f"no rule for {method} {path}"
    return Scope.ADMIN


def management_routes() -> list[tuple[str, str, ManagementRoute]]:
    found = []
    for context in api_routes(create_api(max_request_bytes=1 << 20)):
        route = context.original_route
        if isinstance(route, ManagementRoute):
            found += [(method, context.path_format, route) for method in sorted(context.methods or ())]
    return found


ROUTES = management_routes()


def test_every_management_route_declares_the_scope_the_issue_gives_it() -> None:
    assert len(ROUTES) >= 30
    undeclared = [f"{m} {p}" for m, p, r in ROUTES if not r.declares_scope]
    assert undeclared == [], "declare each route's scope with @requires (app/api/auth.py)"
    wrong = {f"{m} {p}": (r.scope.value, expected_scope(m, p).value) for m, p, r in ROUTES
             if r.scope is not expected_scope(m, p)}
    assert wrong == {}


def test_a_route_that_declares_no_scope_needs_admin() -> None:
    from fastapi import APIRouter

    router = APIRouter(route_class=ManagementRoute)

    @router.get("/v1/undeclared")
    async def undeclared() -> None: ...

    [route] = router.routes
    assert isinstance(route, ManagementRoute) and not route.declares_scope and route.scope is Scope.ADMIN


def test_requires_written_above_the_route_decorator_fails_at_import() -> None:
    from fastapi import APIRouter

    from app.api.auth import requires

    router = APIRouter(route_class=ManagementRoute)
    with pytest.raises(TypeError, match="under the route decorator"):
        @requires(Scope.READ)  # too late: the route below is created first, demanding admin
        @router.get("/v1/misplaced")
        async def misplaced() -> None: ...


def test_the_document_declares_the_security_of_every_operation() -> None:
    app = create_api(max_request_bytes=1 << 20)
    document = app.openapi()
    schemes = document["components"]["securitySchemes"]
    assert schemes["HTTPBearer"]["type"] == schemes["CallbackToken"]["type"] == "http"
    assert schemes["HTTPBearer"]["scheme"] == schemes["CallbackToken"]["scheme"] == "bearer"
    scopes = {(m.lower(), p): r.scope.value for m, p, r in ROUTES}
    seen = set()
    for path, operations in document["paths"].items():
        for method, operation in operations.items():
            where = f"{method.upper()} {path}"
            assert "security" in operation, where
            if (method, path) in scopes:
                assert operation["security"] == [{"HTTPBearer": []}], where
                assert operation["x-jobwire-scope"] == scopes[(method, path)], where
                assert f"API key scope: `{scopes[(method, path)]}`" in operation["description"], where
                assert "403" in operation["responses"], where
                seen.add((method, path))
            elif "callbacks" in operation["tags"]:
                assert operation["security"] == [{"CallbackToken": []}], where
                assert "x-jobwire-scope" not in operation, where
            else:
                assert path in ("/healthz", "/readyz", "/metrics"), where
                assert operation["security"] == [], where
    assert seen == set(scopes)
    assert {"/openapi.json", "/docs"}.isdisjoint(document["paths"])


# --- a server with a bootstrap key; database keys made per test ---------------------------

@pytest.fixture
async def client(boot_server: RunningServer, db: Database) -> AsyncIterator[httpx.AsyncClient]:
    """A client that sends no key by itself; `db` empties the tables (the keys too) first."""
    async with httpx.AsyncClient(base_url=boot_server.url, timeout=10) as c:
        yield c


async def new_key(client: httpx.AsyncClient, scopes: list[str], queues: list[str] | None = None,
                  *, as_: dict[str, str] = BOOT, name: str = "test") -> dict[str, Any]:
    body: dict[str, Any] = {"name": name, "scopes": scopes}
    if queues is not None:
        body["queues"] = queues
    response = await client.post("/v1/api-keys", json=body, headers=as_)
    assert response.status_code == 201, response.text
    return response.json()


def assert_problem(response: httpx.Response, status: int, *words: str) -> None:
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == PROBLEM
    for word in words:
        assert word in response.json()["detail"], response.json()["detail"]


def concrete(path: str) -> str:
    return (path.replace("{execution_id}", SOME_ID).replace("{key_id}", SOME_ID).replace("{secret_id}", SOME_ID)
            .replace("{workflow_id}", SOME_ID).replace("{name}", "x").replace("{job_id}", "x"))


async def answer(client: httpx.AsyncClient, method: str, path: str, **options: Any) -> httpx.Response:
    """The answer to a request; an event stream, which has no end, as its status and headers."""
    async with client.stream(method, path, **options) as response:
        if response.headers.get("content-type", "").startswith("text/event-stream"):
            return httpx.Response(response.status_code, headers=response.headers, request=response.request)
        await response.aread()
    return response


@pytest.mark.parametrize("held", [s.value for s in Scope])
async def test_each_scope_against_every_management_route(client: httpx.AsyncClient, held: str) -> None:
    """The matrix over the route table: a key with one scope passes the check of exactly the routes
    its scope grants (whatever they then answer: 404 for the placeholder ids, 422 for the empty
    bodies) and is refused 403 naming the scope lacked on every other, before its body is read."""
    key = bearer((await new_key(client, [held]))["key"])
    allowed = granted([Scope(held)])
    for method, path, route in ROUTES:
        body = {} if method in ("POST", "PUT") else None
        response = await answer(client, method, concrete(path), json=body, headers=key)
        where = f"{held} key: {method} {path} → {response.status_code} {response.text}"
        if route.scope in allowed:
            assert response.status_code not in (401, 403), where
        else:
            assert response.status_code == 403, where
            assert response.headers["content-type"] == PROBLEM
            assert response.json()["detail"].startswith(f"this key has scopes [{held}]; {route.scope.value} is "
                                                        "needed"), where


async def test_each_scope_succeeds_on_a_route_of_its_own(client: httpx.AsyncClient) -> None:
    assert (await client.put("/v1/handlers/h", json={"url": NOWHERE}, headers=BOOT)).status_code == 201
    keys = {s: bearer((await new_key(client, [s]))["key"]) for s in ("read", "enqueue", "operate", "admin")}

    enqueued = await client.post("/v1/jobs", json={"handler": "h", "run_at": LATER}, headers=keys["enqueue"])
    assert enqueued.status_code == 201, enqueued.text
    batch = await client.post("/v1/jobs/batch", json={"jobs": [{"handler": "h", "run_at": LATER}]},
                              headers=keys["enqueue"])
    assert batch.status_code == 201, batch.text
    execution = enqueued.json()["id"]
    for key in ("read", "operate", "admin"):  # operate and admin imply read
        assert (await client.get(f"/v1/executions/{execution}", headers=keys[key])).status_code == 200
        assert (await client.get("/v1/handlers", headers=keys[key])).status_code == 200
    assert_problem(await client.get(f"/v1/executions/{execution}", headers=keys["enqueue"]), 403, "read is needed")
    assert_problem(await client.post(f"/v1/executions/{execution}/cancel", headers=keys["read"]), 403,
                   "this key has scopes [read]; operate is needed")
    cancelled = await client.post(f"/v1/executions/{execution}/cancel", headers=keys["operate"])
    assert cancelled.status_code == 200 and cancelled.json()["state"] == "CANCELLED"
    assert (await client.post(f"/v1/executions/{execution}/retry", headers=keys["operate"])).status_code == 200
    assert (await client.post("/v1/queues/default/pause", headers=keys["operate"])).status_code == 200
    assert (await client.post("/v1/queues/default/resume", headers=keys["operate"])).status_code == 200
    bulk = await client.post("/v1/executions/bulk-cancel", json={"queue": "default"}, headers=keys["operate"])
    assert bulk.status_code == 200 and bulk.json()["changed"] == 2
    assert (await client.delete(f"/v1/executions/{execution}", headers=keys["operate"])).status_code == 204
    assert_problem(await client.put("/v1/handlers/h2", json={"url": NOWHERE}, headers=keys["operate"]), 403,
                   "admin is needed")
    assert (await client.put("/v1/handlers/h2", json={"url": NOWHERE}, headers=keys["admin"])).status_code == 201
    schedule = {"cron": "0 0 * * *", "handler": "h2"}
    assert (await client.put("/v1/schedules/s", json=schedule, headers=keys["admin"])).status_code == 201
    assert (await client.post("/v1/schedules/s/trigger", headers=keys["admin"])).status_code == 201
    assert (await client.get("/v1/api-keys", headers=keys["admin"])).status_code == 200
    assert_problem(await client.get("/v1/api-keys", headers=keys["operate"]), 403, "admin is needed")
    # A key of several scopes holds each.
    both = bearer((await new_key(client, ["read", "enqueue"]))["key"])
    assert (await client.post("/v1/jobs", json={"handler": "h", "run_at": LATER}, headers=both)).status_code == 201
    assert (await client.get("/v1/executions", headers=both)).status_code == 200
    assert_problem(await client.post("/v1/queues/default/pause", headers=both), 403,
                   "this key has scopes [read, enqueue]; operate is needed")


# --- 401 -----------------------------------------------------------------------------------

async def test_missing_unknown_and_revoked_keys_are_401(client: httpx.AsyncClient) -> None:
    created = await new_key(client, ["admin"])
    key = bearer(created["key"])
    assert (await client.get("/v1/executions", headers=key)).status_code == 200
    for headers in ({}, bearer("jw_" + "A" * 43), bearer(created["key"] + "x"), bearer(created["key"][:-1]),
                    bearer("jw_"), {"authorization": "Basic " + created["key"]}):
        response = await client.get("/v1/executions", headers=headers)
        assert_problem(response, 401)
        assert response.headers["www-authenticate"] == "Bearer"
    assert (await client.delete(f"/v1/api-keys/{created['id']}", headers=BOOT)).status_code == 204
    revoked = await client.get("/v1/executions", headers=key)  # the node that deleted it: at once
    assert_problem(revoked, 401, "not valid")
    assert revoked.headers["www-authenticate"] == "Bearer"


async def test_a_refused_key_is_401_or_403_before_its_body_is_read(client: httpx.AsyncClient) -> None:
    read = bearer((await new_key(client, ["read"]))["key"])
    for headers, status in ((bearer("jw_nope"), 401), (read, 403)):
        for raw in (b"{not json", b'{"handler": NaN}'):
            response = await client.post("/v1/jobs", content=raw,
                                         headers={**headers, "content-type": "application/json"})
            assert response.status_code == status, response.text


# --- the keys themselves -------------------------------------------------------------------

async def test_a_key_is_shown_once_and_stored_only_as_its_hash(client: httpx.AsyncClient, db: Database) -> None:
    created = await new_key(client, ["enqueue", "read"], ["b", "a"], name="ci deploys")
    key = created.pop("key")
    assert key.startswith("jw_") and len(key) == 46
    assert created["name"] == "ci deploys" and created["scopes"] == ["read", "enqueue"]
    assert created["queues"] == ["a", "b"]
    listed = (await client.get("/v1/api-keys", headers=BOOT)).json()["items"]
    assert listed == [created]  # the same fields, without the key
    rows = await sql(db, "SELECT id, name, key_hash, scopes, queues, created_at FROM job_api_keys")
    assert len(rows) == 1
    assert rows[0]["key_hash"] == hashlib.sha256(key.encode()).hexdigest()
    assert str(rows[0]["id"]) == created["id"] and rows[0]["scopes"] == ["read", "enqueue"]
    assert not any(key in str(value) or key[3:] in str(value) for value in dict(rows[0]).values())
    second = await new_key(client, ["read"])
    assert second["key"] != key


@pytest.mark.parametrize(("body", "field"), [
    ({"name": "x", "scopes": []}, "scopes"),
    ({"name": "x", "scopes": ["root"]}, "scopes[0]"),
    ({"name": "", "scopes": ["read"]}, "name"),
    ({"scopes": ["read"]}, "name"),
    ({"name": "x", "scopes": ["read"], "queues": []}, "queues"),
    ({"name": "x", "scopes": ["read"], "queues": ["not a name"]}, "queues[0]"),
    ({"name": "x", "scopes": ["admin"], "queues": ["a"]}, "queues"),
    ({"name": "x", "scopes": ["read"], "key": "jw_mine"}, "key"),
])
async def test_invalid_key_requests_are_422(client: httpx.AsyncClient, body: dict[str, Any], field: str) -> None:
    response = await client.post("/v1/api-keys", json=body, headers=BOOT)
    assert response.status_code == 422, response.text
    assert field in [e["field"] for e in response.json()["errors"]]


async def test_deleting_an_unknown_key_is_404_and_with_a_bootstrap_key_the_last_one_may_go(
        client: httpx.AsyncClient) -> None:
    assert_problem(await client.delete(f"/v1/api-keys/{uuid.uuid4()}", headers=BOOT), 404)
    assert_problem(await client.delete("/v1/api-keys/nope", headers=BOOT), 422)
    created = await new_key(client, ["read"])
    assert (await client.delete(f"/v1/api-keys/{created['id']}", headers=BOOT)).status_code == 204
    assert (await client.get("/v1/api-keys", headers=BOOT)).json() == {"items": []}
    assert_problem(await client.get("/v1/executions"), 401)  # the bootstrap key still closes the API


# --- queue-limited keys --------------------------------------------------------------------

async def enqueue(client: httpx.AsyncClient, queue: str, n: int = 1) -> list[str]:
    response = await client.post("/v1/jobs/batch", json={"jobs": [{"handler": "h", "queue": queue, "run_at": LATER}
                                                                   for _ in range(n)]}, headers=BOOT)
    assert response.status_code == 201, response.text
    return [e["id"] for e in response.json()["items"]]


@pytest.fixture
async def queued(client: httpx.AsyncClient) -> dict[str, list[str]]:
    """Executions in queues a, b and c (in that order), handler h."""
    assert (await client.put("/v1/handlers/h", json={"url": NOWHERE}, headers=BOOT)).status_code == 201
    return {q: await enqueue(client, q, 2) for q in ("a", "b", "c")}


async def test_a_queue_limited_key_reads_only_its_queues(client: httpx.AsyncClient,
                                                         queued: dict[str, list[str]]) -> None:
    key = bearer((await new_key(client, ["read"], ["a", "c"]))["key"])
    listing = (await client.get("/v1/executions", headers=key)).json()
    everything = (await client.get("/v1/executions?limit=500", headers=BOOT)).json()["items"]
    assert [e["id"] for e in listing["items"]] == [e["id"] for e in everything if e["queue"] in ("a", "c")]
    assert listing["next_cursor"] is None
    # Page by page, across its queues, in the listing's order.
    seen, cursor = [], None
    while True:
        page = (await client.get("/v1/executions", params={"limit": 1, **({"cursor": cursor} if cursor else {})},
                                 headers=key)).json()
        seen += [e["id"] for e in page["items"]]
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert seen == [e["id"] for e in listing["items"]]
    assert (await client.get("/v1/executions?queue=b", headers=key)).json()["items"] == []
    in_c = (await client.get("/v1/executions?queue=c", headers=key)).json()["items"]
    assert sorted(e["id"] for e in in_c) == sorted(queued["c"])

    mine, other = queued["a"][0], queued["b"][0]
    for suffix in ("", "/logs", "/attempts", "/events"):
        assert (await client.get(f"/v1/executions/{mine}{suffix}", headers=key)).status_code == 200, suffix
        assert_problem(await client.get(f"/v1/executions/{other}{suffix}", headers=key), 404, "not found")
        assert (await client.get(f"/v1/executions/{other}{suffix}", headers=BOOT)).status_code == 200, suffix

    queues = (await client.get("/v1/queues", headers=key)).json()["items"]
    assert [q["name"] for q in queues] == ["a", "c"]


async def test_a_queue_limited_key_reads_only_its_queues_schedules(client: httpx.AsyncClient,
                                                                  queued: dict[str, list[str]]) -> None:
    for name, queue in (("in-a", "a"), ("in-b", "b"), ("in-c", "c")):
        schedule = {"cron": "0 0 * * *", "handler": "h", "queue": queue, "payload": {"secret": f"{name}-payload"}}
        assert (await client.put(f"/v1/schedules/{name}", json=schedule, headers=BOOT)).status_code == 201
    key = bearer((await new_key(client, ["read"], ["a", "c"]))["key"])
    listing = await client.get("/v1/schedules", headers=key)
    assert [s["job_id"] for s in listing.json()["items"]] == ["in-a", "in-c"]
    assert "in-b" not in listing.text
    for suffix in ("", "/preview"):
        assert (await client.get(f"/v1/schedules/in-a{suffix}", headers=key)).status_code == 200
        hidden = await client.get(f"/v1/schedules/in-b{suffix}", headers=key)
        absent = await client.get(f"/v1/schedules/nothing{suffix}", headers=key)
        assert_problem(hidden, 404, "not found")
        assert hidden.json() == {**absent.json(), "detail": absent.json()["detail"].replace("nothing", "in-b")}
        assert "payload" not in hidden.text
    assert len((await client.get("/v1/schedules", headers=BOOT)).json()["items"]) == 3


def counts(response: httpx.Response) -> tuple[int, int, bool]:
    """A bulk action's (matched, changed, more)."""
    assert response.status_code == 200, response.text
    body = response.json()
    return body["matched"], body["changed"], body["more"]


async def test_a_queue_limited_key_acts_only_on_its_queues(client: httpx.AsyncClient,
                                                           queued: dict[str, list[str]]) -> None:
    key = bearer((await new_key(client, ["operate"], ["a"]))["key"])
    mine, other = queued["a"][0], queued["b"][0]
    for action in ("cancel", "retry"):
        assert_problem(await client.post(f"/v1/executions/{other}/{action}", headers=key), 404)
    assert_problem(await client.delete(f"/v1/executions/{other}", headers=key), 404)
    other_state = (await client.get(f"/v1/executions/{other}", headers=BOOT)).json()["state"]
    assert other_state == "ENQUEUED"

    assert (await client.post(f"/v1/executions/{mine}/cancel", headers=key)).json()["state"] == "CANCELLED"
    assert (await client.post(f"/v1/executions/{mine}/retry", headers=key)).json()["state"] == "ENQUEUED"
    assert (await client.post(f"/v1/executions/{mine}/cancel", headers=key)).status_code == 200
    assert (await client.delete(f"/v1/executions/{mine}", headers=key)).status_code == 204

    # Bulk: the filter narrowed to its queues; one naming another queue matches nothing.
    assert counts(await client.post("/v1/executions/bulk-cancel", json={"queue": "b"}, headers=key)) == (0, 0, False)
    ids = [*queued["a"], *queued["b"]]
    assert counts(await client.post("/v1/executions/bulk-cancel", json={"ids": ids}, headers=key)) == (1, 1, False)
    everything = await client.post("/v1/executions/bulk-retry", json={"state": "CANCELLED"}, headers=key)
    assert counts(everything) == (1, 1, False)
    states = {e["id"]: e["state"] for e in (await client.get("/v1/executions", headers=BOOT)).json()["items"]}
    assert [states[i] for i in queued["b"] + queued["c"]] == ["ENQUEUED"] * 4

    assert_problem(await client.post("/v1/queues/b/pause", headers=key), 403, "'b'", "limited to queues [a]")
    assert_problem(await client.post("/v1/queues/b/resume", headers=key), 403, "'b'")
    assert (await client.post("/v1/queues/a/pause", headers=key)).json()["paused"] is True
    assert [q["name"] for q in (await client.get("/v1/queues", headers=BOOT)).json()["items"] if q["paused"]] == ["a"]


async def test_a_bulk_action_of_a_key_of_several_queues_works_through_all_of_them(
        client: httpx.AsyncClient, queued: dict[str, list[str]]) -> None:
    key = bearer((await new_key(client, ["operate"], ["a", "c"]))["key"])
    first = await client.post("/v1/executions/bulk-cancel", json={"state": "ENQUEUED", "limit": 3}, headers=key)
    assert counts(first) == (3, 3, True)
    second = await client.post("/v1/executions/bulk-cancel", json={"state": "ENQUEUED", "limit": 3}, headers=key)
    assert counts(second) == (1, 1, False)
    items = (await client.get("/v1/executions", headers=BOOT)).json()["items"]
    assert sorted(e["queue"] for e in items if e["state"] == "CANCELLED") == ["a", "a", "c", "c"]


async def test_a_queue_limited_key_lists_by_the_new_filters_within_its_queues(client: httpx.AsyncClient,
                                                                            queued: dict[str, list[str]]) -> None:
    """The metadata, key and window filters page across the key's queues, never into another."""
    tagged = {}
    for queue in ("a", "b", "c", "a", "c"):
        job = {"handler": "h", "queue": queue, "run_at": LATER, "metadata": {"team": "ops"},
               "concurrency_key": "k1", "idempotency_key": f"idem-{len(tagged)}"}
        response = await client.post("/v1/jobs", json=job, headers=BOOT)
        tagged[response.json()["id"]] = queue
    key = bearer((await new_key(client, ["read"], ["a", "c"]))["key"])
    mine = [i for i, queue in reversed(tagged.items()) if queue != "b"]  # newest first
    for params in ({"metadata": "team:ops"}, {"concurrency_key": "k1"},
                   {"metadata": "team:ops", "created_after": "2000-01-01T00:00:00Z", "queue": "a"}):
        seen, cursor = [], None
        while True:
            page = await client.get("/v1/executions", headers=key,
                                    params={"limit": 1, **params, **({"cursor": cursor} if cursor else {})})
            assert page.status_code == 200, page.text
            seen += [e["id"] for e in page.json()["items"]]
            cursor = page.json()["next_cursor"]
            if cursor is None:
                break
        assert seen == [i for i in mine if params.get("queue") in (None, tagged[i])], params
    theirs = next(i for i, queue in tagged.items() if queue == "b")
    other_key = f"idem-{list(tagged).index(theirs)}"
    assert (await client.get("/v1/executions", params={"idempotency_key": other_key}, headers=key)
            ).json()["items"] == []
    assert len((await client.get("/v1/executions", params={"idempotency_key": other_key}, headers=BOOT)
                ).json()["items"]) == 1


async def test_a_queue_limited_keys_dry_run_counts_its_queues_only(client: httpx.AsyncClient,
                                                                  queued: dict[str, list[str]]) -> None:
    key = bearer((await new_key(client, ["operate"], ["a", "c"]))["key"])
    dry = {"state": "ENQUEUED", "dry_run": True}
    assert (await client.post("/v1/executions/bulk-cancel", json=dry, headers=key)).json() == {
        "matched": 4, "more": False}
    assert (await client.post("/v1/executions/bulk-cancel", json={**dry, "queue": "b"}, headers=key)).json() == {
        "matched": 0, "more": False}
    assert (await client.post("/v1/executions/bulk-cancel", json={**dry, "ids": queued["b"]}, headers=key)).json() == {
        "matched": 0, "more": False}
    states = [e["state"] for e in (await client.get("/v1/executions", headers=BOOT)).json()["items"]]
    assert states == ["ENQUEUED"] * 6
    assert counts(await client.post("/v1/executions/bulk-cancel", json={"state": "ENQUEUED"}, headers=key)
                  ) == (4, 4, False)


async def test_a_queue_limited_key_enqueues_only_into_its_queues(client: httpx.AsyncClient, db: Database) -> None:
    assert (await client.put("/v1/handlers/h", json={"url": NOWHERE}, headers=BOOT)).status_code == 201
    key = bearer((await new_key(client, ["enqueue"], ["a"]))["key"])
    assert (await client.post("/v1/jobs", json={"handler": "h", "queue": "a"}, headers=key)).status_code == 201
    assert_problem(await client.post("/v1/jobs", json={"handler": "h", "queue": "b"}, headers=key), 403,
                   "limited to queues [a]", "'b'")
    assert_problem(await client.post("/v1/jobs", json={"handler": "h"}, headers=key), 403, "'default'")
    batch = {"jobs": [{"handler": "h", "queue": "a"}, {"handler": "h", "queue": "b"}]}
    assert_problem(await client.post("/v1/jobs/batch", json=batch, headers=key), 403, "jobs[1].queue 'b'")
    assert [r["queue"] for r in await sql(db, "SELECT queue FROM job_executions")] == ["a"]
    ok = await client.post("/v1/jobs/batch", json={"jobs": [{"handler": "h", "queue": "a"}]}, headers=key)
    assert ok.status_code == 201, ok.text


# --- open API, the last key, and other nodes -----------------------------------------------

@pytest.fixture
async def two_nodes(jobwire: Callable[..., Awaitable[RunningServer]]) -> AsyncIterator[list[httpx.AsyncClient]]:
    """Two nodes on one database with no bootstrap key; the `jobwire` fixture empties the tables."""
    servers = [await jobwire(), await jobwire()]
    async with httpx.AsyncClient(base_url=servers[0].url, timeout=10) as one, \
            httpx.AsyncClient(base_url=servers[1].url, timeout=10) as two:
        yield [one, two]


async def wait_for_status(client: httpx.AsyncClient, path: str, headers: dict[str, str], status: int,
                          within: float) -> float:
    """Seconds until `path` answers `status`; fails after `within` seconds."""
    started = time.monotonic()
    while True:
        response = await client.get(path, headers=headers)
        elapsed = time.monotonic() - started
        if response.status_code == status:
            return elapsed
        assert elapsed < within, f"{path} still answers {response.status_code} after {elapsed:.1f} s"
        await asyncio.sleep(0.05)


async def test_the_api_is_open_while_no_key_exists_and_closes_on_every_node_with_the_first(
        two_nodes: list[httpx.AsyncClient]) -> None:
    one, two = two_nodes
    for node in (one, two):
        assert (await node.get("/v1/executions")).status_code == 200
        assert (await node.get("/v1/executions", headers=bearer("whatever"))).status_code == 200
    created = await new_key(one, ["admin"], as_={})  # open: anyone may create the first key
    assert_problem(await one.get("/v1/executions"), 401)  # the node that created it: at once
    assert (await one.get("/v1/executions", headers=bearer(created["key"]))).status_code == 200
    elapsed = await wait_for_status(two, "/v1/executions", {}, 401, within=5.0)
    assert elapsed <= 3.0  # the cache holds an answer 2 s
    assert (await two.get("/v1/executions", headers=bearer(created["key"]))).status_code == 200
    assert_problem(await two.get("/v1/executions", headers=bearer("whatever")), 401)


async def test_a_revoked_key_stops_working_on_every_node_within_5_seconds(
        two_nodes: list[httpx.AsyncClient]) -> None:
    one, two = two_nodes
    admin = bearer((await new_key(one, ["admin"], as_={}))["key"])
    doomed = await new_key(one, ["read"], as_=admin)
    key = bearer(doomed["key"])
    assert (await two.get("/v1/executions", headers=key)).status_code == 200  # node two has it cached now
    assert (await one.delete(f"/v1/api-keys/{doomed['id']}", headers=admin)).status_code == 204
    deleted_at = time.monotonic()
    assert_problem(await one.get("/v1/executions", headers=key), 401)
    await wait_for_status(two, "/v1/executions", key, 401, within=5.0)
    assert time.monotonic() - deleted_at < 5.0
    assert (await two.get("/v1/executions", headers=admin)).status_code == 200


async def test_the_last_database_key_cannot_be_deleted_without_a_bootstrap_key(
        two_nodes: list[httpx.AsyncClient]) -> None:
    one, _ = two_nodes
    first = await new_key(one, ["admin"], as_={})
    admin = bearer(first["key"])
    assert_problem(await one.delete(f"/v1/api-keys/{first['id']}", headers=admin), 409, "open the API")
    second = await new_key(one, ["admin"], as_=admin)
    assert (await one.delete(f"/v1/api-keys/{first['id']}", headers=bearer(second["key"]))).status_code == 204
    assert_problem(await one.delete(f"/v1/api-keys/{second['id']}", headers=bearer(second["key"])), 409)
    assert [k["id"] for k in (await one.get("/v1/api-keys", headers=bearer(second["key"]))).json()["items"]] == \
        [second["id"]]
    assert_problem(await one.get("/v1/executions"), 401)
