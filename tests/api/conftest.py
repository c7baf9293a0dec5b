"""What several API test modules share: a client of the module's API-only server with the tables
emptied (the `db` fixture) and a handler `h` registered at an address no call reaches (`h_api`;
the root conftest's `api` is a client of a full server of the test's own)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest

from app.db.database import Database
from tests.conftest import RunningServer, register

NOWHERE = "http://127.0.0.1:9/jobs"  # port 9 (discard): nothing answers
LATER = "2999-01-01T00:00:00Z"  # keeps a job ENQUEUED, never dispatched


@pytest.fixture
async def h_api(api_only_server: RunningServer, db: Database) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=api_only_server.url, timeout=30) as client:
        await register(client, "h", NOWHERE)
        yield client
