"""Handler URLs at registration (PUT /v1/handlers/{name}): only URLs that can be delivered to as
they are written, and no IP literal that JOBWIRE_HANDLER_NETWORKS refuses (422 naming `url`).
A host name is not resolved here: the dispatch clients judge the address they connect to
(tests/runtime/test_ssrf_guard.py)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest

from app.db.database import Database
from tests.conftest import RunningServer, problem_fields, settings_for, start_server

NEVER_CALLED = [
    "http://169.254.169.254/latest/meta-data",  # the cloud metadata service
    "http://[fe80::1]/",  # link-local
    "http://0.0.0.0/",  # unspecified (reaches this very host)
    "http://224.0.0.1/",  # multicast
    "http://255.255.255.255/",  # broadcast
    "http://[::ffff:169.254.169.254]/",  # IPv4-mapped: judged as the IPv4 address
    "http://[::]:8080/",
    "http://100.100.100.200/latest/meta-data",  # a cloud metadata address outside link-local
]


@pytest.fixture(scope="module", params=["any", "private", "public"])
async def policy_server(request: pytest.FixtureRequest, database_url: str) -> AsyncIterator[RunningServer]:
    server = await start_server(settings_for(database_url, handler_networks=request.param), background=False)
    yield server
    await server.stop()


@pytest.fixture
async def client(policy_server: RunningServer, db: Database) -> AsyncIterator[httpx.AsyncClient]:
    """A client of the policy's server, on emptied tables (the server runs no loops to race the TRUNCATE)."""
    async with httpx.AsyncClient(base_url=policy_server.url, timeout=10) as c:
        yield c


async def put(client: httpx.AsyncClient, url: str, name: str = "h") -> httpx.Response:
    return await client.put(f"/v1/handlers/{name}", json={"url": url})


def refusal(response: httpx.Response) -> str:
    assert problem_fields(response, 422) == ["url"]
    return response.json()["errors"][0]["message"]


@pytest.mark.parametrize("url", NEVER_CALLED)
async def test_a_never_called_address_is_refused_at_registration_under_every_policy(
        client: httpx.AsyncClient, url: str) -> None:
    message = refusal(await put(client, url))
    assert "JOBWIRE_HANDLER_NETWORKS" in message
    assert (await client.get("/v1/handlers")).json() == {"items": []}


async def test_the_metadata_address_is_refused_naming_its_class(client: httpx.AsyncClient) -> None:
    message = refusal(await put(client, "http://169.254.169.254/latest/meta-data"))
    assert "169.254.169.254 is link-local" in message


async def test_loopback_is_refused_under_public_only(client: httpx.AsyncClient, policy_server: RunningServer) -> None:
    response = await put(client, "http://127.0.0.1/")
    if policy_server.settings.handler_networks == "public":
        assert "127.0.0.1 is loopback, outside JOBWIRE_HANDLER_NETWORKS=public" in refusal(response)
    else:
        assert response.status_code == 201, response.text


async def test_a_host_name_is_not_resolved_at_registration(client: httpx.AsyncClient) -> None:
    """`localhost` resolves to loopback, refused under `public` when called; a name's answer may
    change, so registration leaves the judgement to each call."""
    for name, url in (("a", "http://localhost:9/h"), ("b", "http://handler.test/h")):
        response = await put(client, url, name)
        assert response.status_code == 201, response.text


async def test_a_cidr_that_names_link_local_allows_it(database_url: str, db: Database) -> None:
    server = await start_server(settings_for(database_url, handler_networks="public,169.254.169.254/32"),
                                background=False)
    try:
        async with httpx.AsyncClient(base_url=server.url, timeout=10) as c:
            allowed = await put(c, "http://169.254.169.254/latest/meta-data", "metadata")
            assert allowed.status_code == 201, allowed.text
            assert refusal(await put(c, "http://169.254.169.253/", "neighbour"))  # only what it names
            assert refusal(await put(c, "http://127.0.0.1/", "loopback"))
    finally:
        await server.stop()


@pytest.mark.parametrize(("url", "says"), [
    ("ftp://files.example.com/x", "http:// or https://"),
    ("file:///etc/passwd", "http:// or https://"),
    ("gopher://h/", "http:// or https://"),
    ("HTTP://example.com/", "lower case"),
    ("http://user:pw@example.com/", "user-info"),
    ("http://token@example.com/", "user-info"),
    ("http://example.com/h#frag", "fragment"),
    ("http://example.com/#", "fragment"),
    ("http:///path", "no host"),
    ("http://:8080/", "no host"),
    ("http://example.com:/h", "no port"),
    ("http://example.com:0/h", "port"),
    ("http://example.com:65536/h", "port"),
    ("http://bücher.example/h", "xn--bcher-kva.example"),
    ("http://example.com/bücher", "%C3%BC"),
    ("http://example.com/?q=ä", "%C3%A4"),
    ("http://example.com/a b", "%20"),
    ("http://example.com/a\\b", "%5C"),
    ("http://example.com/%zz", "two hex digits"),
    ("http://Example.com/", "lower case"),
    ("http://127.1/", "a.b.c.d"),
    ("http://2130706433/", "a.b.c.d"),
    ("http://0x7f.0.0.1/", "a.b.c.d"),
    ("http://[fe80::1%25eth0]/", "zone"),
    ("http://xn--abc.example/", "IDNA"),
    ("http://example.com/h?", "empty query"),
])
async def test_a_url_that_cannot_be_called_as_written_is_refused_naming_url(
        client: httpx.AsyncClient, url: str, says: str) -> None:
    assert says in refusal(await put(client, url))


@pytest.mark.parametrize("url", [
    "http://xn--bcher-kva.example/h",  # an IDNA host, in the form that is called
    "https://example.com:8443/hooks/run?queue=a&b=%C3%BC",
    "http://mailer.internal/jobs",
    "http://my_service:8080/",  # compose service names may hold '_'
    "http://example.com./h",
    "http://example.com/a/%2e%2e/b",  # sent as written: neither client resolves dot segments
])
async def test_a_deliverable_url_is_stored_exactly_as_written(client: httpx.AsyncClient, url: str) -> None:
    response = await put(client, url)
    assert response.status_code == 201, response.text
    assert response.json()["url"] == url
    assert (await client.get("/v1/handlers/h")).json()["url"] == url


@pytest.mark.parametrize(("url", "allowed_under"), [
    ("http://10.1.2.3:8080/h", {"any", "private"}),
    ("http://[fd00::1]:8080/h", {"any", "private"}),
    ("http://100.64.0.1/h", {"any", "private"}),
    ("http://8.8.8.8/h", {"any", "public"}),
    ("http://[2606:4700::1111]/h", {"any", "public"}),
    ("http://[::ffff:8.8.8.8]/h", {"any", "public"}),
    ("http://192.0.2.1/h", {"any"}),  # documentation: neither private nor public
])
async def test_an_ip_literal_is_judged_by_the_policy_at_registration(
        client: httpx.AsyncClient, policy_server: RunningServer, url: str, allowed_under: set[str]) -> None:
    response = await put(client, url)
    if policy_server.settings.handler_networks in allowed_under:
        assert response.status_code == 201, response.text
        assert response.json()["url"] == url
    else:
        assert "JOBWIRE_HANDLER_NETWORKS" in refusal(response)
