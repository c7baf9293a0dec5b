"""Real `jobwire serve` processes for the cluster tests."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import asyncpg
import httpx
from aiohttp import web
from sqlalchemy.engine import make_url

from tests.conftest import free_port

JOBWIRE = str(Path(sys.executable).parent / "jobwire")


def serve(env: dict[str, str], log: Path, log_level: str = "warning") -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    full = {k: v for k, v in os.environ.items() if not k.startswith("JOBWIRE_")}
    full.update(env, JOBWIRE_PORT=str(port), JOBWIRE_HOST="127.0.0.1")
    with log.open("wb") as handle:  # the child keeps its own descriptor
        process = subprocess.Popen([JOBWIRE, "serve", "--log-level", log_level], env=full, stdout=handle,
                                   stderr=subprocess.STDOUT)
    return process, f"http://127.0.0.1:{port}"


async def wait_for_line(log: Path, text: str, timeout: float = 30) -> str:
    """The first line of the log file that contains `text`, once it is written."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for line in log.read_text(errors="replace").splitlines():
            if text in line:
                return line
        await asyncio.sleep(0.05)
    raise AssertionError(f"no line with {text!r} in {timeout}s:\n{log.read_text(errors='replace')[-3000:]}")


async def wait_ready(url: str, process: subprocess.Popen[bytes], log: Path, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    async with httpx.AsyncClient() as client:
        while time.monotonic() < deadline:
            if process.poll() is not None:
                raise AssertionError(f"jobwire exited {process.returncode}:\n{log.read_text()}")
            try:
                if (await client.get(f"{url}/readyz")).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            await asyncio.sleep(0.1)
    raise AssertionError(f"jobwire not ready in {timeout}s:\n{log.read_text()}")


def terminate(process: subprocess.Popen[bytes], timeout: float = 30) -> int:
    process.send_signal(signal.SIGTERM)
    try:
        return process.wait(timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        raise




async def handler_server(path: str, handle) -> tuple[web.AppRunner, str]:  # noqa: ANN001
    """A real handler on loopback, in this test's event loop; returns (runner, url of `path`)."""
    app = web.Application()
    app.router.add_post(path, handle)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    port = free_port()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    return runner, f"http://127.0.0.1:{port}{path}"


async def connect(url: str) -> asyncpg.Connection:
    """A plain asyncpg connection to a test database (to watch the tables from outside)."""
    return await asyncpg.connect(make_url(url).set(drivername="postgresql").render_as_string(False))


Node = tuple[subprocess.Popen[bytes], str, Path]  # process, base URL, log file


def serve_nodes(names: tuple[str, ...], env: dict[str, str], logs: Path) -> list[Node]:
    """Start one `jobwire serve` per name (JOBWIRE_NODE_NAME) with the same env; logs in `logs`."""
    nodes = []
    for name in names:
        log = logs / f"{name}.log"
        process, base = serve({**env, "JOBWIRE_NODE_NAME": name}, log)
        nodes.append((process, base, log))
    return nodes


async def wait_all_ready(nodes: list[Node]) -> None:
    for process, base, log in nodes:
        await wait_ready(base, process, log)
