"""Every dispatch says who calls: `User-Agent: Jobwire/<version>` (DESIGN §5), with either HTTP
client (JOBWIRE_DISPATCH_CLIENT), as a real handler receives it."""

from __future__ import annotations

import importlib.metadata
from typing import Any

import httpx
import pytest

from tests.conftest import HandlerServer, register, wait_for_state


@pytest.mark.parametrize("client", ["http11", "aiohttp"])
async def test_every_dispatch_carries_user_agent_jobwire_and_its_version(
        jobwire: Any, handler: HandlerServer, client: str) -> None:
    server = await jobwire(dispatch_client=client)
    async with httpx.AsyncClient(base_url=server.url, timeout=10) as api:
        await register(api, "h", handler.url + "/work")
        created = await api.post("/v1/jobs", json={"handler": "h", "payload": 1})
        assert created.status_code == 201, created.text
        await wait_for_state(api, created.json()["id"], "SUCCEEDED")
    [headers] = handler.headers
    assert headers["User-Agent"] == f"Jobwire/{importlib.metadata.version('jobwire')}"
