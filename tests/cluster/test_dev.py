"""`jobwire dev` as a new user runs it: one command serves on the embedded PostgreSQL with the
sample handler `echo` registered, and prints the commands of a first job, which work pasted into
a shell as they are (curl and jq); started again on the same data, it still does."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.cluster.processes import JOBWIRE
from tests.conftest import free_port

pytestmark = pytest.mark.cluster


def start_dev(cwd: Path, port: int) -> subprocess.Popen[str]:
    env = {k: v for k, v in os.environ.items() if not k.upper().startswith("JOBWIRE_") and k != "XDG_RUNTIME_DIR"}
    return subprocess.Popen([JOBWIRE, "dev", "--port", str(port)], cwd=cwd, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)


def printed_commands(process: subprocess.Popen[str], timeout: float = 120) -> tuple[list[str], str]:
    """The indented command lines `jobwire dev` prints, and all it printed up to them."""
    assert process.stdout is not None
    seen: list[str] = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        line = process.stdout.readline()
        if not line:
            break
        seen.append(line)
        if line.startswith("API documentation:"):
            return [s.strip() for s in seen if s.startswith("  ")], "".join(seen)
    raise AssertionError("jobwire dev printed no first job:\n" + "".join(seen))


def run_in_shell(commands: list[str]) -> str:
    done = subprocess.run(["bash", "-euo", "pipefail", "-c", "\n".join(commands)], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout


def stop(process: subprocess.Popen[str]) -> int:
    process.send_signal(signal.SIGINT)
    try:
        process.communicate(timeout=60)  # what it says while it stops, to its end
        return process.returncode
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()


@pytest.mark.skipif(not (shutil.which("curl") and shutil.which("jq")) and not os.environ.get("CI"),
                    reason="the printed commands need curl and jq")
def test_jobwire_dev_serves_a_first_job_to_success_from_what_it_prints(tmp_path: Path) -> None:
    port = free_port()
    for run in ("first start", "second start, same data"):
        started = time.monotonic()
        dev = start_dev(tmp_path, port)
        try:
            [enqueue, show], output = printed_commands(dev)
            assert "XDG_RUNTIME_DIR" not in output, output
            assert f"http://127.0.0.1:{port}/v1/jobs" in enqueue, output
            # Pasted as printed, with a pause in between for the dispatch, as a person would.
            result = run_in_shell([enqueue, "for _ in $(seq 1 100); do", f"  {show} | grep -q SUCCEEDED && break",
                                   "  sleep 0.2", "done", show])
            assert '"state": "SUCCEEDED"' in result and '"hello": "world"' in result, (run, result)
            took = time.monotonic() - started
        finally:
            assert stop(dev) == 0, run
        assert (tmp_path / ".jobwire" / "pg").is_dir()  # the embedded database, in ./.jobwire
        print(f"{run}: start to SUCCEEDED in {took:.1f} s")
