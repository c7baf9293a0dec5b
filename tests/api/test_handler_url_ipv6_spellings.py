"""Registration (PUT /v1/handlers/{name}) judges an IPv6 literal that spells an IPv4 address as
that address, and refuses the carriers it does not unwrap, with a 422 naming `url`."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest

from app.db.database import Database
from tests.conftest import RunningServer, problem_fields, settings_for, start_server


@pytest.fixture(scope="module", params=["any", "public"])
async def policy_server(request: pytest.FixtureRequest, database_url: str) -> AsyncIterator[RunningServer]:
    server = await start_server(settings_for(database_url, handler_networks=request.param), background=False)
    yield server
    await server.stop()


@pytest.fixture
async def client(policy_server: RunningServer, db: Database) -> AsyncIterator[httpx.AsyncClient]:
    """A client of the policy's server, on emptied tables (the server runs no loops to race the TRUNCATE)."""
    async with httpx.AsyncClient(base_url=policy_server.url, timeout=10) as c:
        yield c


async def refusal(client: httpx.AsyncClient, url: str) -> str:
    response = await client.put("/v1/handlers/h", json={"url": url})
    assert problem_fields(response, 422) == ["url"]
    return response.json()["errors"][0]["message"]


@pytest.mark.parametrize("host", ["2002:a9fe:a9fe::", "64:ff9b::a9fe:a9fe", "::ffff:0:a9fe:a9fe", "::a9fe:a9fe"])
async def test_every_ipv6_spelling_of_the_metadata_address_is_refused_as_that_address(
        client: httpx.AsyncClient, host: str) -> None:
    message = await refusal(client, f"http://[{host}]/latest/meta-data")
    assert f"{host} (as 169.254.169.254) is link-local, which is never called unless a CIDR" in message
    assert (await client.get("/v1/handlers")).json() == {"items": []}


@pytest.mark.parametrize(("host", "kind"), [
    ("2001:0:4136:e378:8000:63bf:3fff:fdd2", "Teredo (RFC 4380)"),
    ("64:ff9b:1::a9fe:a9fe", "local-use NAT64 (RFC 8215)"),
])
async def test_a_carrier_that_is_not_unwrapped_is_refused_at_registration(
        client: httpx.AsyncClient, host: str, kind: str) -> None:
    assert f"{host} is {kind}, which is never called unless a CIDR" in await refusal(client, f"http://[{host}]/")


async def test_an_ipv6_spelling_of_loopback_is_judged_as_loopback(
        client: httpx.AsyncClient, policy_server: RunningServer) -> None:
    response = await client.put("/v1/handlers/h", json={"url": "http://[2002:7f00:1::]:8080/h"})
    if policy_server.settings.handler_networks == "public":
        assert "2002:7f00:1:: (as 127.0.0.1) is loopback, outside JOBWIRE_HANDLER_NETWORKS=public" in (
            response.json()["errors"][0]["message"])
    else:
        assert response.status_code == 201, response.text
