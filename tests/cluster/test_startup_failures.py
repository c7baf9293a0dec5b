"""`jobwire serve` as a real process (operations issue, item 5): a node that cannot start prints
one line naming the setting and the cause, `jobwire: cannot start: <SETTING>: <cause>`, and exits
2 without a traceback; a node that starts says "serving on" only once its port takes connections,
and says when it stops, in the log format asked for."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest

from tests.cluster.processes import JOBWIRE, serve, terminate, wait_ready
from tests.conftest import free_port, with_database

pytestmark = pytest.mark.cluster


def environment(**settings: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.upper().startswith("JOBWIRE_")}
    env.update({"JOBWIRE_HOST": "127.0.0.1", "JOBWIRE_PORT": str(free_port())}, **settings)
    return env


def cannot_start(**settings: str) -> str:
    """Runs `jobwire serve` (at the default level, info) expecting it to fail; its one failure line."""
    done = subprocess.run([JOBWIRE, "serve"], env=environment(**settings), stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, timeout=180)
    output = done.stdout
    assert done.returncode == 2, output
    assert "Traceback" not in output, output
    failures = [line for line in output.splitlines() if line.startswith("jobwire: cannot start: ")]
    assert len(failures) == 1, output
    assert "serving on" not in output, output
    return failures[0].removeprefix("jobwire: cannot start: ")


def test_a_database_url_that_is_not_postgresql() -> None:
    line = cannot_start(JOBWIRE_DATABASE_URL="mysql://jobs:hunter2@127.0.0.1/jobs")
    assert line.startswith("JOBWIRE_DATABASE_URL: unsupported scheme 'mysql'"), line
    assert "hunter2" not in line


def test_a_database_nothing_listens_for() -> None:
    line = cannot_start(JOBWIRE_DATABASE_URL="postgresql://jobwire:hunter2@127.0.0.1:1/jobs")
    assert line == "JOBWIRE_DATABASE_URL: could not connect to 127.0.0.1:1 (connection refused)"


def test_a_database_that_does_not_exist(server_url: str) -> None:
    line = cannot_start(JOBWIRE_DATABASE_URL=with_database(server_url, "jobwire_no_such_database"))
    assert line.startswith('JOBWIRE_DATABASE_URL: database "jobwire_no_such_database" does not exist'), line


def test_a_database_that_does_not_exist_without_migrations(server_url: str) -> None:
    line = cannot_start(JOBWIRE_DATABASE_URL=with_database(server_url, "jobwire_no_such_database"),
                        JOBWIRE_MIGRATE_ON_START="false")
    assert line.startswith('JOBWIRE_DATABASE_URL: database "jobwire_no_such_database" does not exist'), line


def test_a_port_already_taken(server_url: str) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        line = cannot_start(JOBWIRE_DATABASE_URL=server_url, JOBWIRE_PORT=str(port))
    assert line == (f"JOBWIRE_PORT: cannot listen on 127.0.0.1:{port}: the address is already in use "
                    "(another process listens on this port)")


def test_an_embedded_data_dir_that_is_a_file(tmp_path: Path) -> None:
    (tmp_path / "not-a-dir").write_text("x")
    line = cannot_start(JOBWIRE_DATA_DIR=str(tmp_path / "not-a-dir"))
    assert line == f"JOBWIRE_DATA_DIR: cannot create the data directory {tmp_path / 'not-a-dir'}: a file is in " \
                   "the way (not a directory)"


def test_an_embedded_server_that_fails_to_initialise(tmp_path: Path) -> None:
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "pg").write_text("x")  # where initdb would create the cluster
    line = cannot_start(JOBWIRE_DATA_DIR=str(tmp_path / "data"))
    assert line.startswith(f"JOBWIRE_DATA_DIR: embedded PostgreSQL could not start in {tmp_path / 'data' / 'pg'}: "
                           "initdb: error:"), line


async def test_the_clients_api_key_on_a_server_that_takes_no_key(fresh_database) -> None:
    url = await fresh_database()
    line = cannot_start(JOBWIRE_API_KEY="secret", JOBWIRE_DATABASE_URL=url)
    assert line.startswith("JOBWIRE_API_KEY: set, but it is the client's variable"), line
    assert "JOBWIRE_API_KEYS" in line


async def test_the_clients_api_key_in_the_shell_of_a_server_closed_by_stored_keys(fresh_database, tmp_path) -> None:
    """An operator who keeps JOBWIRE_API_KEY in their shell for the CLI can still start a server
    whose keys live in its database."""
    url = await fresh_database()
    first, first_url = serve({"JOBWIRE_DATABASE_URL": url}, tmp_path / "first.log")
    try:
        await wait_ready(first_url, first, tmp_path / "first.log")
        async with httpx.AsyncClient(base_url=first_url, timeout=30) as api:
            created = await api.post("/v1/api-keys", json={"name": "ops", "scopes": ["admin"]})
            assert created.status_code == 201, created.text
            key = created.json()["key"]
    finally:
        assert terminate(first) == 0
    second, second_url = serve({"JOBWIRE_DATABASE_URL": url, "JOBWIRE_API_KEY": key}, tmp_path / "second.log")
    try:
        await wait_ready(second_url, second, tmp_path / "second.log")
        async with httpx.AsyncClient(base_url=second_url, timeout=30) as api:
            assert (await api.get("/v1/handlers")).status_code == 401  # closed: the stored key guards it
            assert (await api.get("/v1/handlers", headers={"authorization": f"Bearer {key}"})).status_code == 200
    finally:
        assert terminate(second) == 0


def test_an_invalid_setting() -> None:
    line = cannot_start(JOBWIRE_CONCURRENCY="0")
    assert line.startswith("JOBWIRE_CONCURRENCY: "), line


def wait_for_line(log: Path, process: subprocess.Popen[bytes], found: Callable[[str], bool],
                  timeout: float = 60) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for line in log.read_text().splitlines():
            if found(line):
                return line
        if process.poll() is not None:
            raise AssertionError(f"jobwire exited {process.returncode}:\n{log.read_text()}")
        time.sleep(0.02)
    raise AssertionError(f"no such line in {timeout}s:\n{log.read_text()}")


async def test_a_node_says_serving_on_once_its_port_takes_connections_and_logs_json(
        tmp_path: Path, fresh_database: Callable[..., object]) -> None:
    url = await fresh_database()  # type: ignore[misc]
    env = environment(JOBWIRE_DATABASE_URL=url, JOBWIRE_LOG_FORMAT="json", JOBWIRE_POLL_INTERVALL="0.5",
                      JOBWIRE_NODE_NAME="n1")
    port = int(env["JOBWIRE_PORT"])
    log = tmp_path / "serve.log"
    with log.open("wb") as handle:
        process = subprocess.Popen([JOBWIRE, "serve"], env=env, stdout=handle, stderr=subprocess.STDOUT)
    try:
        wait_for_line(log, process, lambda line: "serving on" in line)
        # At once: the line is written after the port listens, not before.
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
    finally:
        process.send_signal(signal.SIGTERM)
        code = process.wait(60)
    assert code == 0, log.read_text()
    lines = [json.loads(line) for line in log.read_text().splitlines()]  # every line is one JSON object
    messages = [line["message"] for line in lines]
    assert {"time", "level", "logger", "message"} <= set(lines[0])
    assert all(line["time"].endswith("Z") for line in lines)

    [warning] = [line for line in lines if line.get("variable") == "JOBWIRE_POLL_INTERVALL"]
    assert warning["level"] == "WARNING" and warning["closest_setting"] == "JOBWIRE_POLL_INTERVAL"
    [migration] = [line for line in lines if line["message"].startswith("migrations:")]
    assert migration["to_revision"] and "from_revision" not in migration  # an empty database: no revision before
    [serving] = [line for line in lines if "serving on" in line["message"]]
    assert serving["node"].startswith("n1-") and serving["public_url"] == f"http://127.0.0.1:{port}"
    assert serving["database"] == "external" and serving["level"] == "INFO"
    [stopped] = [line for line in lines if line["message"].endswith(" stopped")]
    assert stopped["node"] == serving["node"]
    order = [i for i, m in enumerate(messages) if m.startswith("migrations:") or "serving on" in m
             or m == "Application startup complete." or m.endswith(" stopped")]
    assert [messages[i].split(" ")[0] for i in order] == ["migrations:", "Application", "node", "node"], messages


async def test_a_second_start_says_the_database_is_already_at_head(
        tmp_path: Path, fresh_database: Callable[..., object]) -> None:
    url = await fresh_database()  # type: ignore[misc]
    lines = []
    for attempt in range(2):
        log = tmp_path / f"serve-{attempt}.log"
        with log.open("wb") as handle:
            process = subprocess.Popen([JOBWIRE, "serve"], env=environment(JOBWIRE_DATABASE_URL=url), stdout=handle,
                                       stderr=subprocess.STDOUT)
        try:
            lines.append(wait_for_line(log, process, lambda line: "migrations:" in line))
            wait_for_line(log, process, lambda line: "serving on" in line)
        finally:
            process.send_signal(signal.SIGTERM)
            assert process.wait(60) == 0, log.read_text()
    assert "the database was at no revision (empty), now at " in lines[0] and "to_revision=" in lines[0]
    assert "the database is already at head" in lines[1] and "revision=" in lines[1]


def _limits_open_files(soft: int, hard: int | None = None) -> Callable[[], None]:
    """A preexec_fn: the child's open-files limit set to (soft, hard), hard unchanged when None."""
    def limit() -> None:
        import resource
        resource.setrlimit(resource.RLIMIT_NOFILE,
                           (soft, resource.getrlimit(resource.RLIMIT_NOFILE)[1] if hard is None else hard))
    return limit


def _open_files_of(pid: int) -> tuple[int, int]:
    line = next(x for x in Path(f"/proc/{pid}/limits").read_text().splitlines() if x.startswith("Max open files"))
    soft, hard = line.split()[3:5]
    return int(soft), int(hard)


@pytest.mark.skipif(not Path("/proc/self/limits").exists(), reason="reads /proc/<pid>/limits")
async def test_a_node_raises_its_open_files_limit_to_the_hard_limit(
        tmp_path: Path, fresh_database: Callable[..., object]) -> None:
    url = await fresh_database()  # type: ignore[misc]
    hard = _open_files_of(os.getpid())[1]
    if hard < 2048:
        pytest.skip(f"this machine's hard limit of open files is {hard}")
    log = tmp_path / "serve.log"
    with log.open("wb") as handle:
        process = subprocess.Popen([JOBWIRE, "serve"], env=environment(JOBWIRE_DATABASE_URL=url), stdout=handle,
                                   stderr=subprocess.STDOUT, preexec_fn=_limits_open_files(1024))
    try:
        wait_for_line(log, process, lambda line: "serving on" in line)
        assert _open_files_of(process.pid) == (hard, hard)
    finally:
        process.send_signal(signal.SIGTERM)
        assert process.wait(60) == 0, log.read_text()
    assert "open files are limited" not in log.read_text()


async def test_a_node_whose_open_files_cannot_hold_its_connections_says_so(
        tmp_path: Path, fresh_database: Callable[..., object]) -> None:
    url = await fresh_database()  # type: ignore[misc]
    log = tmp_path / "serve.log"
    env = environment(JOBWIRE_DATABASE_URL=url, JOBWIRE_LOG_FORMAT="json", JOBWIRE_CONCURRENCY="400")
    with log.open("wb") as handle:
        process = subprocess.Popen([JOBWIRE, "serve"], env=env, stdout=handle, stderr=subprocess.STDOUT,
                                   preexec_fn=_limits_open_files(300, 300))
    try:
        wait_for_line(log, process, lambda line: "serving on" in line)  # a warning, not a refusal
    finally:
        process.send_signal(signal.SIGTERM)
        assert process.wait(60) == 0, log.read_text()
    [warning] = [json.loads(x) for x in log.read_text().splitlines() if "open files are limited" in x]
    assert warning["level"] == "WARNING" and warning["open_files"] == 300
    # Two connections per call in flight at worst, the database's and the event deliveries', and spare.
    assert warning["open_files_needed"] == 2 * 400 + 16 + 16 + 64
    assert "JOBWIRE_CONCURRENCY=400" in warning["message"]
