"""Every secret at rest is encrypted under JOBWIRE_SECRET_KEY (issue 21, behaviour 5): the
callback-token server key is created encrypted, and a start-up with the key encrypts what is still
plain (the server key, the handlers' signing secrets) and empties the deprecated job_handlers.secret
copies, keeping every token and signature as it was. A node that cannot read the secrets at rest
(no key, or another one) does not start: a StartupFailure naming JOBWIRE_SECRET_KEY. Keys rotate as
a comma-separated list, newest first."""

from __future__ import annotations

from typing import Any
from uuid import UUID

import httpx
import pytest
from aiohttp import web
from cryptography.fernet import Fernet
from standardwebhooks.webhooks import Webhook, WebhookVerificationError

from app.delivery.secret_cipher import SecretCipher
from app.domain.handler_secrets import is_encrypted
from app.domain.signing import callback_token, new_handler_secret
from app.main import create_app
from app.startup import StartupFailure
from tests.conftest import HandlerServer, OwnDatabase, register, scalar, settings_for, sql, wait_for_state

SERVER_KEY = "SELECT value FROM job_meta WHERE key = 'callback_server_key'"
SECRETS = "SELECT secret FROM job_handler_secrets ORDER BY id"


def new_key() -> str:
    return Fernet.generate_key().decode()


async def accept(_: web.Request, __: dict[str, Any]) -> web.StreamResponse:
    return web.Response(status=202)


async def at_rest(own: OwnDatabase) -> tuple[str, list[str], list[str | None]]:
    """The server key, the handler secrets and the deprecated copies, as stored."""
    copies = [r["secret"] for r in await sql(own.db, "SELECT secret FROM job_handlers ORDER BY name")]
    return (await scalar(own.db, SERVER_KEY), [r["secret"] for r in await sql(own.db, SECRETS)], copies)


async def cannot_start(own: OwnDatabase, **settings: Any) -> StartupFailure:
    """Runs a node's start-up on the database, expecting it to fail."""
    app = create_app(settings_for(own.url, **settings), background=False)
    with pytest.raises(StartupFailure) as failure:
        async with app.router.lifespan_context(app):
            pass
    return failure.value


def verifies(secret: str, request: tuple[bytes, dict[str, str]]) -> bool:
    body, headers = request
    try:
        Webhook(secret).verify(body, {k.lower(): v for k, v in headers.items()})
    except WebhookVerificationError:
        return False
    return True


async def accepted_job(api: httpx.AsyncClient, handler: HandlerServer) -> tuple[str, str]:
    """A job its handler accepts (202): its id and the callback token it was sent."""
    await register(api, "later", handler.route("/later", accept))
    seen = len(handler.received)
    job = (await api.post("/v1/jobs", json={"handler": "later"})).json()
    await handler.wait_for(seen + 1)
    sent = next(s for s in handler.received if s["execution_id"] == job["id"])
    return job["id"], sent["callback"]["token"]


async def complete(api: httpx.AsyncClient, execution_id: str, token: str) -> httpx.Response:
    return await api.post(f"/v1/executions/{execution_id}/complete", json={"outcome": "succeeded"},
                          headers={"authorization": f"Bearer {token}"})


async def test_with_a_secret_key_the_server_key_is_created_encrypted_and_a_token_from_a_dump_is_refused(
        own_database: OwnDatabase, handler: HandlerServer) -> None:
    key = new_key()
    server = await own_database.start(secret_key=key)
    stored = await scalar(own_database.db, SERVER_KEY)
    assert is_encrypted(stored)
    server_key = SecretCipher(key).reveal(stored)
    assert server_key not in stored

    async with httpx.AsyncClient(base_url=server.url, timeout=10) as api:
        execution_id, token = await accepted_job(api, handler)
        assert token == callback_token(server_key, UUID(execution_id), 0)  # signed with the key as decrypted
        # Whoever holds a dump of the database has the stored text only: a token made with it is refused.
        forged = callback_token(stored, UUID(execution_id), 0)
        assert (await complete(api, execution_id, forged)).status_code == 403
        done = await complete(api, execution_id, token)
        assert done.status_code == 200 and done.json()["state"] == "SUCCEEDED"


async def test_a_start_up_with_the_key_encrypts_what_is_plain_and_keeps_every_token_and_signature(
        own_database: OwnDatabase, handler: HandlerServer) -> None:
    plain = await own_database.start()
    async with httpx.AsyncClient(base_url=plain.url, timeout=10) as api:
        first = (await register(api, "h", handler.url + "/h"))["secret"]
        second = (await api.post("/v1/handlers/h/secrets")).json()["secret"]
        execution_id, token = await accepted_job(api, handler)
    await plain.stop()
    # A node of the previous version copies a new handler's first secret into job_handlers.secret.
    await sql(own_database.db, "UPDATE job_handlers SET secret = :s WHERE name = 'h'", s=first)
    server_key, secrets, _ = await at_rest(own_database)
    assert not is_encrypted(server_key) and not any(is_encrypted(s) for s in secrets)

    key = new_key()
    server = await own_database.start(secret_key=key)
    sealed_key, sealed, copies = await at_rest(own_database)
    cipher = SecretCipher(key)
    assert is_encrypted(sealed_key) and cipher.reveal(sealed_key) == server_key
    assert all(is_encrypted(s) for s in sealed) and sorted(cipher.reveal(s) for s in sealed) == sorted(secrets)
    assert copies == [None, None]  # h and later
    async with httpx.AsyncClient(base_url=server.url, timeout=10) as api:
        done = await complete(api, execution_id, token)  # a token made before still speaks for its attempt
        assert done.status_code == 200 and done.json()["state"] == "SUCCEEDED"
        job = (await api.post("/v1/jobs", json={"handler": "h"})).json()
        assert (await wait_for_state(api, job["id"], "SUCCEEDED"))["attempt"] == 0
    request = (handler.bodies[-1], handler.headers[-1])
    assert verifies(first, request) and verifies(second, request)

    # Once sealed, a start-up with the same key writes nothing.
    await server.stop()
    await own_database.start(secret_key=key)
    assert await at_rest(own_database) == (sealed_key, sealed, copies)


@pytest.mark.parametrize("node_key", [None, "another"], ids=["no-key", "another-key"])
async def test_a_node_that_cannot_read_the_server_key_does_not_start_and_writes_nothing(
        own_database: OwnDatabase, node_key: str | None) -> None:
    first = await own_database.start(secret_key=new_key())
    await first.stop()
    before = await at_rest(own_database)

    failure = await cannot_start(own_database, **({"secret_key": new_key()} if node_key else {}))
    assert failure.setting == "JOBWIRE_SECRET_KEY"
    assert failure.cause.startswith("the callback-token server key (job_meta) ")
    assert ("is not set on this node" if node_key is None else "encrypted with another key") in failure.cause
    assert "set it to the key the other nodes use" in failure.cause
    assert await at_rest(own_database) == before


@pytest.mark.parametrize("node_key", [None, "another"], ids=["no-key", "another-key"])
async def test_a_node_that_cannot_read_a_handler_secret_does_not_start_even_while_the_server_key_is_plain(
        own_database: OwnDatabase, node_key: str | None) -> None:
    """Sealing the plain server key under a key that cannot read the handler secrets would shut out
    every node that can: the node checks them all before it writes anything."""
    plain = await own_database.start()
    async with httpx.AsyncClient(base_url=plain.url, timeout=10) as api:
        await register(api, "h", "http://127.0.0.1:9/h")
    await plain.stop()
    sealed = SecretCipher(new_key()).seal(new_handler_secret())  # as a node of the previous version did
    await sql(own_database.db, "UPDATE job_handler_secrets SET secret = :s", s=sealed)
    before = await at_rest(own_database)

    failure = await cannot_start(own_database, **({"secret_key": new_key()} if node_key else {}))
    assert failure.setting == "JOBWIRE_SECRET_KEY"
    assert "of handler 'h'" in failure.cause
    assert await at_rest(own_database) == before
    assert not is_encrypted(before[0])


async def test_a_key_rotates_as_a_list_newest_first_and_the_start_up_re_encrypts_under_the_new_one(
        own_database: OwnDatabase, handler: HandlerServer) -> None:
    old, new = new_key(), new_key()
    first = await own_database.start(secret_key=old)
    async with httpx.AsyncClient(base_url=first.url, timeout=10) as api:
        secret = (await register(api, "h", handler.url + "/h"))["secret"]
    await first.stop()
    server_key = SecretCipher(old).reveal(await scalar(own_database.db, SERVER_KEY))

    rotated = await own_database.start(secret_key=f"{new},{old}")
    stored_key, [stored], _ = await at_rest(own_database)
    assert SecretCipher(new).reveal(stored_key) == server_key and SecretCipher(new).reveal(stored) == secret
    await rotated.stop()

    failure = await cannot_start(own_database, secret_key=old)  # what the old key sealed is gone
    assert failure.setting == "JOBWIRE_SECRET_KEY" and "encrypted with another key" in failure.cause
    server = await own_database.start(secret_key=new)  # the old key can go
    async with httpx.AsyncClient(base_url=server.url, timeout=10) as api:
        job = (await api.post("/v1/jobs", json={"handler": "h"})).json()
        await wait_for_state(api, job["id"], "SUCCEEDED")
    assert verifies(secret, (handler.bodies[-1], handler.headers[-1]))
