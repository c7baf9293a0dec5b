"""The dashboard in a real headless Chromium, driven by Playwright for Python (its async API, on
the tests' own event loop, beside the Jobwire server and the handler server the root conftest
starts). The browser is Debian's (`apt-get install chromium`, .ci/run): CI cannot download one of
Playwright's own. Screenshots of each page go to test-artifacts/screenshots/ (for a look by eye)."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import httpx
import pytest

from tests.conftest import RunningServer

CHROMIUM = os.environ.get("JOBWIRE_TEST_CHROMIUM", "/usr/bin/chromium")
SCREENSHOTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "screenshots"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    for item in items:
        if here in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.browser)
            if not Path(CHROMIUM).exists():
                item.add_marker(pytest.mark.skip(reason=f"no Chromium at {CHROMIUM} (apt-get install chromium, or "
                                                        "set JOBWIRE_TEST_CHROMIUM)"))


@pytest.fixture(scope="session")
async def chromium() -> AsyncIterator[object]:
    from playwright.async_api import async_playwright

    async with async_playwright() as playwright:
        # --no-sandbox: CI runs as root, where Chromium's sandbox cannot start.
        browser = await playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        yield browser
        await browser.close()


@pytest.fixture
async def browser_page(chromium) -> AsyncIterator[object]:  # noqa: ANN001
    context = await chromium.new_context(viewport={"width": 1360, "height": 900})
    page = await context.new_page()
    page.set_default_timeout(15_000)
    yield page
    await context.close()


async def screenshot(page, name: str) -> Path:  # noqa: ANN001
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOTS / f"{name}.png"
    await page.screenshot(path=str(path), full_page=True)
    return path


@pytest.fixture
async def node(jobwire: Callable[..., Awaitable[RunningServer]]) -> AsyncIterator[httpx.AsyncClient]:
    server = await jobwire()
    server.app.state.ui.dashboard.cache_seconds = 0  # what a test stored shows on its next page
    async with httpx.AsyncClient(base_url=server.url, timeout=10) as client:
        client.server = server  # type: ignore[attr-defined]
        yield client
