"""The dashboard's HTTP tests' clients: a server without keys (the dashboard open), and one closed by
the bootstrap key `boot`."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest

from app.db.database import Database
from tests.api.conftest import NOWHERE
from tests.conftest import RunningServer, register

BOOT = {"authorization": "Bearer boot"}


@pytest.fixture
async def open_ui(api_only_server: RunningServer, db: Database) -> AsyncIterator[httpx.AsyncClient]:
    """A browser-like client of a server without keys (the dashboard is open, CSRF still applies)."""
    api_only_server.app.state.ui.dashboard.cache_seconds = 0  # each test reads what it stored
    async with httpx.AsyncClient(base_url=api_only_server.url, timeout=30) as client:
        await register(client, "h", NOWHERE)
        yield client


@pytest.fixture
async def keyed(boot_server: RunningServer, db: Database) -> AsyncIterator[httpx.AsyncClient]:
    boot_server.app.state.ui.dashboard.cache_seconds = 0
    async with httpx.AsyncClient(base_url=boot_server.url, timeout=30) as client:
        response = await client.put("/v1/handlers/h", json={"url": NOWHERE}, headers=BOOT)
        assert response.status_code in (200, 201), response.text
        yield client
