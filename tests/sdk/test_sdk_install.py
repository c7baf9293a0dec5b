"""`pip install ./sdk/python` in a fresh venv gives a working client, toolkit and CLI without
the service: no FastAPI, SQLAlchemy, alembic or `app`; JobwireClient runs a job on a live
Jobwire, the toolkit builds its ASGI app, and the `jobwire` command lists that job (and has no
`serve`: that is the service's); the installed package is typed (py.typed). Slow (it installs from
PyPI), so it runs once in CI with the multi-process tests; tests/sdk/test_sdk_wheel.py checks what
the wheel ships on every run."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import pytest

from tests.sdk.conftest import Live

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(900)]

SDK = Path(__file__).resolve().parents[2] / "sdk" / "python"

CHECK = r"""
import importlib, importlib.metadata, importlib.resources, json, sys
import jobwire, jobwire.outbox, jobwire.handler

async def handle(job, ctx):
    return None

assert callable(jobwire.handler.asgi_app(handle, "whsec_" + "A" * 32))

assert jobwire.__file__.startswith(sys.prefix), jobwire.__file__  # the installed copy, not the tree
for service in ("fastapi", "sqlalchemy", "alembic", "app", "asyncpg", "uvicorn"):
    try:
        importlib.import_module(service)
    except ImportError:
        continue
    raise SystemExit(f"{service} is importable")
requires = importlib.metadata.requires("jobwire-sdk")
assert sorted(r.split(">")[0].split("[")[0] for r in requires if "extra ==" not in r) == ["httpx", "rich"], requires
assert (importlib.resources.files("jobwire") / "py.typed").is_file()

with jobwire.JobwireClient(sys.argv[1]) as client:
    execution = client.jobs.enqueue("echo", {"from": "a fresh venv"})
    done = client.executions.wait(execution.id, timeout=30)
print(json.dumps({"state": done.state, "result": done.result, "version": jobwire.__version__}))
"""


async def run(*command: str, cwd: Path, timeout: float) -> str:
    process = await asyncio.create_subprocess_exec(*command, cwd=cwd, stdout=asyncio.subprocess.PIPE,
                                                   stderr=asyncio.subprocess.STDOUT)
    out, _ = await asyncio.wait_for(process.communicate(), timeout=timeout)
    assert process.returncode == 0, f"{' '.join(command)}:\n{out.decode()}"
    return out.decode()


async def test_a_fresh_venv_gets_a_working_client_without_the_service(live: Live, tmp_path: Path):
    venv = tmp_path / "venv"
    await run(sys.executable, "-m", "venv", str(venv), cwd=tmp_path, timeout=120)
    python = str(venv / "bin" / "python")
    await run(python, "-m", "pip", "install", "-q", "--disable-pip-version-check", str(SDK), cwd=tmp_path,
              timeout=600)
    # -I: neither the working directory nor PYTHON* variables reach sys.path
    out = await run(python, "-I", "-c", CHECK, live.url, cwd=tmp_path, timeout=120)
    assert out.strip().splitlines()[-1] == (
        '{"state": "SUCCEEDED", "result": {"from": "a fresh venv"}, "version": "0.1.0"}')
    command = str(venv / "bin" / "jobwire")
    assert (await run(command, "--version", cwd=tmp_path, timeout=60)).startswith("jobwire-sdk 0.1.0")
    listed = await run(command, "executions", "list", "--url", live.url, "--json", cwd=tmp_path, timeout=60)
    assert [json.loads(line)["result"] for line in listed.splitlines()] == [{"from": "a fresh venv"}]
    process = await asyncio.create_subprocess_exec(command, "serve", cwd=tmp_path, stdout=asyncio.subprocess.PIPE,
                                                   stderr=asyncio.subprocess.PIPE)
    _, err = await asyncio.wait_for(process.communicate(), timeout=60)
    assert process.returncode == 2 and b"Traceback" not in err, err  # a usage error: no such command here
