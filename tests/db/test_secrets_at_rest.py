"""Nodes starting together seal the secrets at rest as one (app/services/secrets_at_rest.py): with
the same key every node ends with the same server key and each secret is encrypted once, decrypting
to what it was; with two keys racing, one wins everything and the nodes of the other fail to start,
having written nothing. Real concurrent sessions, one pool per node, many rounds."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
from cryptography.fernet import Fernet

from app.db.connection import DatabaseConfig
from app.db.database import Database
from app.delivery.secret_cipher import SecretCipher
from app.domain.handler_secrets import UnreadableSecret, is_encrypted
from app.domain.signing import new_handler_secret, new_server_key
from app.services.secrets_at_rest import SecretsAtRest, seal_secrets_at_rest
from tests.conftest import OwnDatabase, scalar, sql

NODES = 8
HANDLERS = 30
ROUNDS = 6


@pytest.fixture
async def nodes(own_database: OwnDatabase) -> AsyncIterator[list[Database]]:
    """One pool per node, each connected before the round starts."""
    pools = [await Database.open(DatabaseConfig(url=own_database.url, pool_size=2)) for _ in range(NODES)]
    yield pools
    for pool in pools:
        await pool.close()


async def plain_database(db: Database) -> tuple[str, dict[str, str]]:
    """A database as a keyless node leaves it: a plain server key, HANDLERS handlers with two
    plain secrets each (the first also copied into job_handlers.secret). Returns the server key
    and every secret by handler name and ordinal."""
    await sql(db, "TRUNCATE job_handler_secrets, job_handlers CASCADE")
    server_key = new_server_key()
    await sql(db, "INSERT INTO job_meta (key, value) VALUES ('callback_server_key', :v) "
                  "ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value", v=server_key)
    plain: dict[str, str] = {}
    for n in range(HANDLERS):
        first, second = new_handler_secret(), new_handler_secret()
        await sql(db, "INSERT INTO job_handlers (name, url, secret) VALUES (:name, 'http://127.0.0.1:9/', :s)",
                  name=f"h{n}", s=first)
        await sql(db, "INSERT INTO job_handler_secrets (handler, secret) VALUES (:name, :a), (:name, :b)",
                  name=f"h{n}", a=first, b=second)
        plain[first], plain[second] = f"h{n}", f"h{n}"
    return server_key, plain


async def race(pools: list[Database], ciphers: list[SecretCipher]) -> list[SecretsAtRest | BaseException]:
    start = asyncio.Event()

    async def node(db: Database, cipher: SecretCipher) -> SecretsAtRest:
        await start.wait()
        return await seal_secrets_at_rest(db, cipher)

    runs = [asyncio.ensure_future(node(db, cipher)) for db, cipher in zip(pools, ciphers, strict=True)]
    await asyncio.sleep(0)
    start.set()
    return await asyncio.gather(*runs, return_exceptions=True)


async def stored_secrets(db: Database) -> list[tuple[str, str]]:
    return [(r["handler"], r["secret"]) for r in await sql(db, "SELECT handler, secret FROM job_handler_secrets")]


async def test_nodes_starting_together_with_one_key_seal_each_secret_once_and_share_the_server_key(
        own_database: OwnDatabase, nodes: list[Database]) -> None:
    key = Fernet.generate_key().decode()
    cipher = SecretCipher(key)
    for _ in range(ROUNDS):
        server_key, plain = await plain_database(own_database.db)
        results = await race(nodes, [SecretCipher(key) for _ in nodes])

        done = [r for r in results if isinstance(r, SecretsAtRest)]
        assert len(done) == NODES, [r for r in results if not isinstance(r, SecretsAtRest)]
        assert {r.server_key for r in done} == {server_key}
        assert sum(r.server_key_sealed for r in done) == 1
        assert sum(r.secrets_sealed for r in done) == len(plain)
        assert sum(r.copies_cleared for r in done) == HANDLERS
        stored_key = await scalar(own_database.db, "SELECT value FROM job_meta WHERE key = 'callback_server_key'")
        assert is_encrypted(stored_key) and cipher.reveal(stored_key) == server_key
        stored = await stored_secrets(own_database.db)
        # Encrypted once: one decryption gives the whsec_ text back, each under its own handler.
        assert all(is_encrypted(s) for _, s in stored)
        assert sorted((cipher.reveal(s), handler) for handler, s in stored) == sorted(plain.items())
        assert await scalar(own_database.db, "SELECT count(*) FROM job_handlers WHERE secret IS NOT NULL") == 0


async def test_nodes_starting_together_with_two_keys_leave_everything_under_one_and_the_others_fail(
        own_database: OwnDatabase, nodes: list[Database]) -> None:
    keys = [Fernet.generate_key().decode() for _ in range(2)]
    for round_ in range(ROUNDS):
        server_key, plain = await plain_database(own_database.db)
        chosen = [keys[(n + round_) % 2] for n in range(NODES)]
        results = await race(nodes, [SecretCipher(k) for k in chosen])

        winners = {k for k, r in zip(chosen, results, strict=True) if isinstance(r, SecretsAtRest)}
        assert len(winners) == 1, results
        [winner] = winners
        for k, r in zip(chosen, results, strict=True):
            if k == winner:
                assert isinstance(r, SecretsAtRest) and r.server_key == server_key
            else:
                assert isinstance(r, UnreadableSecret) and "another key" in str(r), r
        cipher = SecretCipher(winner)
        stored_key = await scalar(own_database.db, "SELECT value FROM job_meta WHERE key = 'callback_server_key'")
        assert cipher.reveal(stored_key) == server_key
        assert sorted((cipher.reveal(s), h) for h, s in await stored_secrets(own_database.db)) == sorted(plain.items())


async def test_a_second_pass_with_the_same_key_writes_nothing(own_database: OwnDatabase) -> None:
    _, plain = await plain_database(own_database.db)
    cipher = SecretCipher(Fernet.generate_key().decode())
    first = await seal_secrets_at_rest(own_database.db, cipher)
    assert (first.server_key_sealed, first.secrets_sealed, first.copies_cleared) == (True, len(plain), HANDLERS)
    before = await stored_secrets(own_database.db)
    again = await seal_secrets_at_rest(own_database.db, cipher)
    assert (again.server_key, again.server_key_sealed, again.secrets_sealed, again.copies_cleared) == (
        first.server_key, False, 0, 0)
    assert await stored_secrets(own_database.db) == before


async def test_without_a_key_plain_secrets_stay_as_they_are_and_only_the_copies_go(own_database: OwnDatabase) -> None:
    server_key, plain = await plain_database(own_database.db)
    done = await seal_secrets_at_rest(own_database.db, SecretCipher())
    assert (done.server_key, done.server_key_sealed, done.secrets_sealed, done.copies_cleared) == (
        server_key, False, 0, HANDLERS)
    assert sorted((s, h) for h, s in await stored_secrets(own_database.db)) == sorted(plain.items())


async def test_a_new_database_gets_one_server_key_however_many_nodes_start_on_it(
        own_database: OwnDatabase, nodes: list[Database]) -> None:
    cipher = SecretCipher(Fernet.generate_key().decode())
    for _ in range(ROUNDS):
        await sql(own_database.db, "DELETE FROM job_meta WHERE key = 'callback_server_key'")
        results = await race(nodes, [cipher] * NODES)
        assert all(isinstance(r, SecretsAtRest) for r in results), results
        keys = {r.server_key for r in results if isinstance(r, SecretsAtRest)}
        assert len(keys) == 1
        stored = await scalar(own_database.db, "SELECT value FROM job_meta WHERE key = 'callback_server_key'")
        assert {cipher.reveal(stored)} == keys


async def test_a_subscriptions_signing_secrets_are_sealed_and_read_as_a_handlers(own_database: OwnDatabase) -> None:
    await plain_database(own_database.db)
    secret = new_handler_secret()
    await sql(own_database.db, "INSERT INTO job_subscriptions (name, url, since, pos_xact) "
                               "VALUES ('s', 'http://127.0.0.1:9/e', CAST(pg_current_snapshot() AS text), 0)")
    await sql(own_database.db, "INSERT INTO job_subscription_secrets (subscription, secret) VALUES ('s', :s)", s=secret)
    cipher = SecretCipher(Fernet.generate_key().decode())
    done = await seal_secrets_at_rest(own_database.db, cipher)
    assert done.secrets_sealed == 2 * HANDLERS + 1
    stored = await scalar(own_database.db, "SELECT secret FROM job_subscription_secrets")
    assert is_encrypted(stored) and cipher.reveal(stored) == secret
    await sql(own_database.db, "UPDATE job_meta SET value = :v WHERE key = 'callback_server_key'", v=new_server_key())
    await sql(own_database.db, "DELETE FROM job_handler_secrets")
    with pytest.raises(UnreadableSecret, match="subscription 's'"):  # only it is left sealed
        await seal_secrets_at_rest(own_database.db, SecretCipher())
