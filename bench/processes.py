"""The processes under test: `jobwire serve` and the no-op handler, each a subprocess on loopback."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import aiohttp


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def wait_http(url: str, proc: subprocess.Popen, timeout: float = 90) -> None:
    deadline = time.monotonic() + timeout
    async with aiohttp.ClientSession() as http:
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise SystemExit(f"{proc.args!r} exited with {proc.returncode} before {url} was ready")
            try:
                async with http.get(url) as r:
                    if r.status == 200:
                        return
            except aiohttp.ClientError:
                pass
            await asyncio.sleep(0.1)
    raise SystemExit(f"{url} not ready after {timeout}s")


@dataclass
class Child:
    proc: subprocess.Popen
    url: str

    @property
    def pid(self) -> int:
        return self.proc.pid

    def stop(self, timeout: float = 60) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)


async def start_handler() -> Child:
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "bench.noop_handler", "--port", str(port)])
    child = Child(proc, f"http://127.0.0.1:{port}")
    await wait_http(f"{child.url}/stats", proc)
    return child


def app_env(app_root: Path | None) -> dict[str, str]:
    """The environment of a `jobwire serve` process: the caller's without JOBWIRE_*, and with
    `app_root` first on PYTHONPATH (which comes before the editable install's .pth entry on sys.path)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("JOBWIRE_")}
    if app_root is not None:
        env["PYTHONPATH"] = os.pathsep.join([str(app_root), *filter(None, [env.get("PYTHONPATH")])])
    return env


def jobwire_command(app_root: Path | None) -> list[str]:
    """The `jobwire` command that runs `app_root`'s serve: the SDK's console script beside this
    interpreter (it finds `serve` through the entry-point group `jobwire.commands`), or, for a
    baseline from before the SDK owned the command (its app/cli.py has its own main and no
    `serve_command` for the entry point to name), that module run directly."""
    cli = app_root / "app" / "cli.py" if app_root is not None else None
    if cli is not None and cli.exists() and "def serve_command" not in cli.read_text():
        return [sys.executable, "-m", "app.cli"]
    exe = Path(sys.executable).parent / "jobwire"
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "jobwire"]


async def start_jobwire(database_url: str, schema: str | None, concurrency: int | None,
                        app_root: Path | None = None, settings: dict[str, str] | None = None) -> Child:
    """One `jobwire serve` process (the console script beside this interpreter) on a free port,
    migrating its database at start-up; JOBWIRE_* of the caller's environment are not passed on.
    With `app_root` (--baseline), that tree is first on PYTHONPATH and the working directory:
    its app/ (and the migrations beside it) is what the process imports, not the editable install's.
    `settings`: more JOBWIRE_* variables for this process (the scale steps: retention, pruning,
    the queues it claims from)."""
    port = free_port()
    env = app_env(app_root)
    env.update(JOBWIRE_PORT=str(port), JOBWIRE_DATABASE_URL=database_url, JOBWIRE_NODE_NAME="bench")
    if schema:
        env["JOBWIRE_DB_SCHEMA"] = schema
    if concurrency:
        env["JOBWIRE_CONCURRENCY"] = str(concurrency)
    env.update(settings or {})
    proc = subprocess.Popen([*jobwire_command(app_root), "serve", "--log-level", "warning"], env=env, cwd=app_root)
    child = Child(proc, f"http://127.0.0.1:{port}")
    await wait_http(f"{child.url}/readyz", proc)
    return child
