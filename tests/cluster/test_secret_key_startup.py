"""`jobwire serve` on a database whose secrets at rest it cannot read (issue 21, behaviour 5): one
line naming JOBWIRE_SECRET_KEY and the secret, exit 2, no traceback; with the key, it serves."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest
from cryptography.fernet import Fernet

from app.db.migrate import upgrade_sync
from app.delivery.secret_cipher import SecretCipher
from app.domain.signing import new_server_key
from tests.cluster.processes import serve, terminate, wait_ready
from tests.cluster.test_startup_failures import cannot_start
from tests.conftest import admin

pytestmark = pytest.mark.cluster


async def test_a_node_without_the_key_of_an_encrypted_server_key_says_so_in_one_line(
        fresh_database: Callable[[], Awaitable[str]], tmp_path: Path) -> None:
    url = await fresh_database()
    await asyncio.to_thread(upgrade_sync, url, None)
    key = Fernet.generate_key().decode()
    sealed = SecretCipher(key).seal(new_server_key())
    await admin(url, f"INSERT INTO job_meta (key, value) VALUES ('callback_server_key', '{sealed}')")

    for env in ({}, {"JOBWIRE_SECRET_KEY": Fernet.generate_key().decode()}):
        line = cannot_start(JOBWIRE_DATABASE_URL=url, **env)
        assert line.startswith("JOBWIRE_SECRET_KEY: the callback-token server key (job_meta) "), line
        assert key not in line and sealed not in line

    node, node_url = serve({"JOBWIRE_DATABASE_URL": url, "JOBWIRE_SECRET_KEY": key}, tmp_path / "node.log")
    try:
        await wait_ready(node_url, node, tmp_path / "node.log")
    finally:
        terminate(node)
