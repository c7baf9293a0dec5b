"""The SDK is typed for its users: `mypy --strict` accepts the example program, a sample using
both clients (tests/sdk/typed_usage.py, each call's type pinned) and the `jobwire` package itself;
and it refuses what is wrong (a misspelt field, a result of the asyncio client used unawaited, an
option the API does not have), so the annotations say something."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
Mypy = Callable[..., subprocess.CompletedProcess[str]]


@pytest.fixture(scope="module")
def mypy(tmp_path_factory: pytest.TempPathFactory) -> Mypy:
    """`mypy --strict` on the targets, one cache for the module's runs (the standard library and
    httpx are read once)."""
    cache = tmp_path_factory.mktemp("mypy-cache")

    def run(*targets: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "mypy", "--strict", "--no-error-summary", "--cache-dir",
                               str(cache), *targets], cwd=REPO, capture_output=True, text=True, timeout=600)

    return run


def test_mypy_strict_accepts_the_example_the_typed_sample_and_the_package(mypy: Mypy) -> None:
    done = mypy("examples/enqueue_and_wait.py", "tests/sdk/typed_usage.py", "sdk/python/src/jobwire")
    assert done.returncode == 0, done.stdout + done.stderr


MISTAKES = '''
from jobwire import AsyncJobwireClient, Execution, JobwireClient

def blocking(client: JobwireClient) -> None:
    done = client.executions.get("e1")
    print(done.stae)
    client.jobs.enqueue("echo", priorty=3)
    client.jobs.enqueue("echo", priority="high")

async def asynchronous(client: AsyncJobwireClient) -> None:
    done: Execution = client.executions.get("e1")
'''


def test_mypy_strict_refuses_a_misspelt_field_an_unawaited_result_and_a_wrong_option(mypy: Mypy,
                                                                                     tmp_path: Path) -> None:
    program = tmp_path / "mistakes.py"
    program.write_text(MISTAKES)
    done = mypy(str(program))
    errors = [line.split(": error: ", 1)[1] for line in done.stdout.splitlines() if ": error: " in line]
    assert done.returncode == 1 and len(errors) == 4, done.stdout
    assert 'has no attribute "stae"' in errors[0]
    assert '"priorty"' in errors[1]
    assert '"priority"' in errors[2] and '"str"' in errors[2]
    assert 'Coroutine' in errors[3] and '"Execution"' in errors[3]
