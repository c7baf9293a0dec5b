"""Standard Webhooks to the letter, as a real handler receives it and verifies with the official
`standardwebhooks` Python package: webhook-id is the execution id on every attempt, the attempt
travels in `jobwire-attempt`; while a handler has several secrets each dispatch carries one
signature per secret, so both verify during a rotation and only the new one after; secrets are
stored encrypted under JOBWIRE_SECRET_KEY, plain ones encrypted by the next start-up with it."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from aiohttp import web
from cryptography.fernet import Fernet
from standardwebhooks.webhooks import Webhook, WebhookVerificationError

from app.domain.signing import new_handler_secret
from app.delivery.secret_cipher import SecretCipher
from tests.conftest import HandlerServer, OwnDatabase, register, scalar, sql, wait_for_state


async def run_job(api: httpx.AsyncClient, handler: HandlerServer, name: str = "h", **body: Any) -> dict[str, Any]:
    """Enqueues a job for `name` and waits for its end; returns the execution."""
    response = await api.post("/v1/jobs", json={"handler": name, "payload": {"n": 1}, **body})
    assert response.status_code == 201, response.text
    return await wait_for_state(api, response.json()["id"], {"SUCCEEDED", "DEAD_LETTER"})


def last_request(handler: HandlerServer) -> tuple[bytes, dict[str, str]]:
    return handler.bodies[-1], {k.lower(): v for k, v in handler.headers[-1].items()}


def verifies(secret: str, body: bytes, headers: dict[str, str]) -> bool:
    try:
        Webhook(secret).verify(body, headers)
    except WebhookVerificationError:
        return False
    return True


async def add_secret(api: httpx.AsyncClient, name: str = "h", **body: Any) -> dict[str, Any]:
    response = await api.post(f"/v1/handlers/{name}/secrets", json=body or None)
    assert response.status_code == 201, response.text
    return response.json()


async def test_webhook_id_is_the_execution_id_on_every_attempt_and_jobwire_attempt_counts(
        api: httpx.AsyncClient, handler: HandlerServer) -> None:
    calls = {"n": 0}

    async def fail_once(_: web.Request, job: dict[str, Any]) -> web.StreamResponse:
        calls["n"] += 1
        if calls["n"] == 1:
            return web.Response(status=500)
        return web.json_response({"result": job["attempt"]})

    secret = (await register(api, "h", handler.route("/work", fail_once)))["secret"]
    done = await run_job(api, handler)
    assert done["state"] == "SUCCEEDED" and done["attempt"] == 1
    sent = [{k.lower(): v for k, v in h.items()} for h in handler.headers]
    assert [h["webhook-id"] for h in sent] == [done["id"], done["id"]]  # handlers dedupe on it
    assert [h["jobwire-attempt"] for h in sent] == ["0", "1"]
    assert [job["attempt"] for job in handler.received] == [0, 1]
    for body, headers in zip(handler.bodies, sent, strict=True):
        assert Webhook(secret).verify(body, headers)["execution_id"] == done["id"]


async def test_both_secrets_verify_during_a_rotation_and_only_the_new_one_after_the_old_is_deleted(
        api: httpx.AsyncClient, handler: HandlerServer) -> None:
    created = await register(api, "h", handler.url + "/work")
    old, old_id = created["secret"], created["secrets"][0]["id"]
    assert (await run_job(api, handler))["state"] == "SUCCEEDED"
    body, headers = last_request(handler)
    assert len(headers["webhook-signature"].split(" ")) == 1 and verifies(old, body, headers)

    new = (await add_secret(api))["secret"]
    assert (await run_job(api, handler))["state"] == "SUCCEEDED"
    body, headers = last_request(handler)
    signatures = headers["webhook-signature"].split(" ")
    assert len(signatures) == 2 and all(s.startswith("v1,") for s in signatures)
    assert verifies(old, body, headers) and verifies(new, body, headers)  # the same request, either secret
    assert not verifies(new_handler_secret(), body, headers)

    assert (await api.delete(f"/v1/handlers/h/secrets/{old_id}")).status_code == 204
    assert (await run_job(api, handler))["state"] == "SUCCEEDED"
    body, headers = last_request(handler)
    assert len(headers["webhook-signature"].split(" ")) == 1
    assert verifies(new, body, headers) and not verifies(old, body, headers)


async def test_expire_others_after_seconds_retires_the_old_secret_when_its_time_comes(
        api: httpx.AsyncClient, handler: HandlerServer, db: Any) -> None:
    old = (await register(api, "h", handler.url + "/work"))["secret"]
    new = (await add_secret(api, expire_others_after_seconds=3600))["secret"]
    assert (await run_job(api, handler))["state"] == "SUCCEEDED"
    body, headers = last_request(handler)
    assert verifies(old, body, headers) and verifies(new, body, headers)  # within the window: both

    # The hour passes (moved in the database, whose clock decides).
    await sql(db, "UPDATE job_handler_secrets SET expires_at = now() - interval '1 second' "
                  "WHERE handler = 'h' AND expires_at IS NOT NULL")
    assert (await run_job(api, handler))["state"] == "SUCCEEDED"
    body, headers = last_request(handler)
    assert verifies(new, body, headers) and not verifies(old, body, headers)
    assert len((await api.get("/v1/handlers/h")).json()["secrets"]) == 1


async def test_expire_others_after_zero_seconds_retires_them_at_once(
        api: httpx.AsyncClient, handler: HandlerServer) -> None:
    old = (await register(api, "h", handler.url + "/work"))["secret"]
    new = (await add_secret(api, expire_others_after_seconds=0))["secret"]
    assert (await run_job(api, handler))["state"] == "SUCCEEDED"
    body, headers = last_request(handler)
    assert verifies(new, body, headers) and not verifies(old, body, headers)


async def test_with_a_secret_key_secrets_are_stored_encrypted_and_every_dispatch_still_verifies(
        own_database: OwnDatabase, handler: HandlerServer) -> None:
    key, db = Fernet.generate_key().decode(), own_database.db
    plain_server = await own_database.start()
    async with httpx.AsyncClient(base_url=plain_server.url, timeout=10) as api:
        before = (await register(api, "before", handler.url + "/before"))["secret"]  # stored plain
    await plain_server.stop()

    server = await own_database.start(secret_key=key)  # its start-up encrypts `before`
    async with httpx.AsyncClient(base_url=server.url, timeout=10) as api:
        after = (await register(api, "after", handler.url + "/after"))["secret"]
        rotated = (await add_secret(api, "before"))["secret"]
        stored = {r["secret"] for r in await sql(db, "SELECT secret FROM job_handler_secrets")}
        assert len(stored) == 3 and all(s.startswith("jwenc1:") for s in stored)
        assert all(plain not in s for s in stored for plain in (before, after, rotated))
        assert {SecretCipher(key).reveal(s) for s in stored} == {before, after, rotated}
        legacy = await scalar(db, "SELECT secret FROM job_handlers WHERE name = 'after'")
        assert legacy is None or legacy.startswith("jwenc1:")  # the deprecated column holds no plain text
        assert "whsec_" not in (await api.get("/v1/handlers")).text

        assert (await run_job(api, handler, "after"))["state"] == "SUCCEEDED"
        body, headers = last_request(handler)
        assert verifies(after, body, headers)
        assert (await run_job(api, handler, "before"))["state"] == "SUCCEEDED"
        body, headers = last_request(handler)
        assert verifies(before, body, headers) and verifies(rotated, body, headers)


@pytest.mark.parametrize("node_key", [None, "another"], ids=["no-key", "another-key"])
async def test_a_node_that_cannot_decrypt_a_secret_fails_the_attempt_saying_why(
        own_database: OwnDatabase, handler: HandlerServer, node_key: str | None) -> None:
    # A secret sealed under another key after this node started (one it could not read at start-up
    # would have kept it from starting: tests/runtime/test_secrets_at_rest.py).
    server = await own_database.start(**({"secret_key": Fernet.generate_key().decode()} if node_key else {}))
    async with httpx.AsyncClient(base_url=server.url, timeout=10) as api:
        await register(api, "h", handler.url + "/work")
        sealed = SecretCipher(Fernet.generate_key().decode()).seal(new_handler_secret())
        await sql(own_database.db, "UPDATE job_handler_secrets SET secret = :s WHERE handler = 'h'", s=sealed)
        done = await run_job(api, handler, max_attempts=1)
    assert done["state"] == "DEAD_LETTER" and done["error_type"] == "handler_failed"
    assert "JOBWIRE_SECRET_KEY" in done["last_error"]
    assert handler.received == []  # nothing unsigned was sent
