"""/docs works offline (operations issue, item 7): the Swagger UI page loads its script, style
and icon from the service itself (the files fastapi-offline ships), never from a CDN."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator

import httpx
import pytest

from app.api.app import create_api


@pytest.fixture
async def client() -> AsyncIterator[httpx.AsyncClient]:
    app = create_api(max_request_bytes=1 << 20)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://jobwire") as c:
        yield c


def referenced(html: str) -> list[str]:
    """Every URL the page loads: src and href attributes, and the document Swagger UI fetches."""
    return re.findall(r'(?:src|href)="([^"]+)"', html) + re.findall(r"url: '([^']+)'", html)


async def test_the_docs_page_references_only_the_services_own_urls(client: httpx.AsyncClient) -> None:
    response = await client.get("/docs")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/html")
    html = response.text
    assert "https://" not in html and "http://" not in html and "//cdn" not in html
    urls = referenced(html)
    assert "/openapi.json" in urls and len(urls) == 4, urls
    assert all(url.startswith("/") and not url.startswith("//") for url in urls), urls
    assert '"validatorUrl": null' in html  # no badge fetched from swagger.io either


@pytest.mark.parametrize(("suffix", "content_type", "marker"), [
    (".js", ("text/javascript", "application/javascript"), b"SwaggerUIBundle"),
    (".css", ("text/css",), b".swagger-ui"),
    (".png", ("image/png",), b"\x89PNG"),
])
async def test_the_pages_assets_are_served_by_the_service(
        client: httpx.AsyncClient, suffix: str, content_type: tuple[str, ...], marker: bytes) -> None:
    [url] = [u for u in referenced((await client.get("/docs")).text) if u.endswith(suffix)]
    response = await client.get(url)
    assert response.status_code == 200
    assert response.headers["content-type"].partition(";")[0] in content_type
    assert marker in response.content[:200_000]


async def test_the_bundled_swagger_ui_reads_openapi_3_1(client: httpx.AsyncClient) -> None:
    # FastAPI writes OpenAPI 3.1 documents, which Swagger UI renders from version 5 on.
    assert (await client.get("/openapi.json")).json()["openapi"].startswith("3.1")
    [script] = [u for u in referenced((await client.get("/docs")).text) if u.endswith(".js")]
    bundle = (await client.get(script)).content
    assert b"OAS31" in bundle or b"oas31" in bundle


async def test_an_asset_that_does_not_exist_is_a_problem_404(client: httpx.AsyncClient) -> None:
    response = await client.get("/docs/assets/nothing.js")
    assert response.status_code == 404
    assert response.headers["content-type"] == "application/problem+json"
