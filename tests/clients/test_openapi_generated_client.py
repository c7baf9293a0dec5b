"""A client generated from openapi/openapi.json (openapi-python-client) is generated without a
warning, type-checks under mypy --strict with a program that uses it, and that program works
against a live node: the document is one that generators consume."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import HandlerServer, RunningServer

REPO = Path(__file__).resolve().parents[2]
DOCUMENT = REPO / "openapi" / "openapi.json"
USAGE = Path(__file__).with_name("openapi_client_usage.py")
USAGE_MODULE = "tests.clients.openapi_client_usage"
BIN = Path(sys.executable).parent
PACKAGE = "jobwire_client"  # from the document's title


@dataclass(frozen=True)
class Generated:
    root: Path  # holds the package
    output: str  # what the generator printed


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> Generated:
    root = tmp_path_factory.mktemp("generated-client")
    config = root / "config.yaml"
    config.write_text("post_hooks: []\n")  # no formatter run: only the code matters here
    done = subprocess.run(
        [str(BIN / "openapi-python-client"), "generate", "--path", str(DOCUMENT), "--output-path",
         str(root / PACKAGE), "--meta", "none", "--config", str(config)],
        capture_output=True, text=True, timeout=300, cwd=root)
    assert done.returncode == 0, done.stdout + done.stderr
    return Generated(root, done.stdout + done.stderr)


@pytest.fixture
def client_importable(generated: Generated, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.syspath_prepend(str(generated.root))
    yield
    # Forgotten with its temporary folder: a later import finds neither.
    for name in [n for n in sys.modules if n in (PACKAGE, USAGE_MODULE) or n.startswith(f"{PACKAGE}.")]:
        del sys.modules[name]


def test_the_generator_has_no_warning_about_the_document(generated: Generated) -> None:
    assert "warning" not in generated.output.lower(), generated.output


def test_each_operation_becomes_a_function_named_after_its_operation_id(generated: Generated) -> None:
    api = generated.root / PACKAGE / "api"
    modules = {f"{p.parent.name}/{p.stem}" for p in api.glob("*/*.py") if p.stem != "__init__"}
    assert {"jobs/enqueue_job", "jobs/enqueue_jobs", "executions/get_execution", "executions/list_executions",
            "callbacks/complete_execution", "handlers/put_handler", "schedules/put_schedule",
            "health/readiness"} <= modules
    operations = [op for item in json.loads(DOCUMENT.read_text())["paths"].values() for op in item.values()
                  if isinstance(op, dict) and "operationId" in op]
    assert len(modules) == len(operations)  # one function per operation, none left out


def test_a_program_using_the_client_type_checks_strictly(generated: Generated) -> None:
    done = subprocess.run(
        [str(BIN / "mypy"), "--strict", "--cache-dir", str(generated.root / ".mypy_cache"), str(USAGE),
         str(generated.root / PACKAGE)],
        capture_output=True, text=True, timeout=300, cwd=generated.root,
        env={"MYPYPATH": str(generated.root), "PATH": str(BIN)})
    assert done.returncode == 0, done.stdout + done.stderr


async def test_the_program_enqueues_and_reads_back_through_the_client(
    client_importable: None, jobwire: Callable[..., Awaitable[RunningServer]], handler: HandlerServer,
) -> None:
    server = await jobwire()
    usage = importlib.import_module(USAGE_MODULE)
    execution = await usage.run(server.url, f"{handler.url}/generated")  # it replies {"result": payload}
    assert execution.state.value == "SUCCEEDED"
    assert execution.result == {"image": "42.png"}  # the handler's reply, parsed by the client
    assert execution.job_id == "generated-1" and execution.progress is None
    assert [str(execution.id)] == [job["execution_id"] for job in handler.received]

