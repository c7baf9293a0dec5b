"""A real Node.js handler (tests/node/server.js) verifies Jobwire's dispatches with the official
`standardwebhooks` npm package, installed by `npm ci` from the committed package-lock.json into a
temporary copy (the tree gets no node_modules); then through a secret rotation: either secret
verifies while both are active, only the new one once the old is deleted.

Without Node.js (or npm) the test is skipped, saying so; under CI (the environment variable CI
set) that is a failure instead: CI has Node.js 20.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import free_port, register, wait_for_state

NODE_APP = Path(__file__).resolve().parents[1] / "node"
NODE_FILES = ("package.json", "package-lock.json", "server.js")


def under_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def node_tools() -> tuple[str, str]:
    node, npm = shutil.which("node"), shutil.which("npm")
    if node and npm:
        return node, npm
    missing = " and ".join(name for name, path in (("node", node), ("npm", npm)) if not path)
    message = (f"{missing} not found on PATH: the Node.js handler test needs Node.js (20, as in CI) with npm "
               "to verify signatures with the standardwebhooks npm package")
    if under_ci():
        pytest.fail(message + " (CI is set: Node.js is required there)")
    pytest.skip(message)


def npm_ci_copy(source: Path, files: tuple[str, ...], into: Path) -> tuple[str, Path]:
    """(node, app): `files` of the Node.js app in `source` copied into `into`, then `npm ci` there
    (exactly the locked versions, or a failure); the tree gets no node_modules."""
    node, npm = node_tools()
    for name in files:
        shutil.copy(source / name, into / name)
    done = subprocess.run([npm, "ci", "--no-audit", "--no-fund", "--ignore-scripts"], cwd=into,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, f"npm ci failed ({done.returncode}):\n{done.stdout}\n{done.stderr}"
    assert (into / "node_modules" / "standardwebhooks" / "package.json").exists()
    return node, into


@pytest.fixture(scope="module")
def node_app(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Path]:
    return npm_ci_copy(NODE_APP, NODE_FILES, tmp_path_factory.mktemp("node-handler"))


NodeHandler = Callable[[str], Awaitable[str]]


@pytest.fixture
async def node_handler(node_app: tuple[str, Path]) -> AsyncIterator[NodeHandler]:
    """Starts `node server.js` verifying with the given secret; returns its URL."""
    node, app = node_app
    async with AsyncExitStack() as stack:

        async def start(secret: str) -> str:
            port = free_port()
            process = await asyncio.create_subprocess_exec(
                node, "server.js", cwd=app, env={**os.environ, "PORT": str(port), "WEBHOOK_SECRET": secret},
                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
            stack.push_async_callback(stop, process)
            assert process.stdout is not None
            line = await asyncio.wait_for(process.stdout.readline(), timeout=30)
            assert line.decode().startswith("listening on"), (line, await process.stderr.read())  # type: ignore[union-attr]
            return f"http://127.0.0.1:{port}/jobs"

        yield start


async def stop(process: asyncio.subprocess.Process) -> None:
    if process.returncode is None:
        process.terminate()
        try:
            await asyncio.wait_for(process.wait(), timeout=10)
        except TimeoutError:
            process.kill()
            await process.wait()


async def run_job(api: httpx.AsyncClient, **body: Any) -> dict[str, Any]:
    response = await api.post("/v1/jobs", json={"handler": "node", **body})
    assert response.status_code == 201, response.text
    return await wait_for_state(api, response.json()["id"], {"SUCCEEDED", "DEAD_LETTER"}, timeout=30)


async def point_to(api: httpx.AsyncClient, url: str) -> None:
    response = await api.put("/v1/handlers/node", json={"url": url})
    assert response.status_code == 200, response.text


async def test_a_node_handler_verifies_with_the_npm_package_through_a_secret_rotation(
        node_handler: NodeHandler, api: httpx.AsyncClient) -> None:
    # 1. One secret: the Node handler verifies and its result is stored.
    created = await register(api, "node", "http://127.0.0.1:9/unused")
    old, old_id = created["secret"], created["secrets"][0]["id"]
    with_old = await node_handler(old)
    await point_to(api, with_old)
    done = await run_job(api, payload={"n": 1})
    assert done["state"] == "SUCCEEDED", done
    assert done["result"] == {"verified": True, "webhook_id": done["id"], "attempt": 0, "body_attempt": 0,
                              "duplicate": False, "signatures": 1, "payload": {"n": 1}}

    # 2. Rotation: a new secret; each dispatch is signed with both, so a handler still holding
    # the old secret verifies, and one deployed with the new secret verifies too.
    new = (await api.post("/v1/handlers/node/secrets")).json()["secret"]
    done = await run_job(api, payload={"n": 2})
    assert done["state"] == "SUCCEEDED", done
    assert done["result"]["verified"] and done["result"]["signatures"] == 2
    with_new = await node_handler(new)
    await point_to(api, with_new)
    done = await run_job(api, payload={"n": 3})
    assert done["state"] == "SUCCEEDED", done
    assert done["result"]["verified"] and done["result"]["signatures"] == 2

    # 3. The old secret deleted: the new one verifies, the old one no longer does (401).
    assert (await api.delete(f"/v1/handlers/node/secrets/{old_id}")).status_code == 204
    done = await run_job(api, payload={"n": 4})
    assert done["state"] == "SUCCEEDED", done
    assert done["result"]["signatures"] == 1 and done["result"]["payload"] == {"n": 4}
    await point_to(api, with_old)
    refused = await run_job(api, payload={"n": 5}, max_attempts=1)
    assert refused["state"] == "DEAD_LETTER" and refused["error_type"] == "http_status"
    assert "HTTP 401" in refused["last_error"] and "signature not verified" in refused["last_error"]
