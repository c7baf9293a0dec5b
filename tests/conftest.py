"""Shared fixtures: a real PostgreSQL (embedded by default, or JOBWIRE_TEST_DATABASE_URL),
one migrated database per test session, tables emptied before each test, a real Jobwire
server (uvicorn on loopback) and a real handler server (aiohttp on loopback)."""

from __future__ import annotations

import asyncio
import logging
import os
import secrets
import shutil
import socket
import tempfile
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import asyncpg
import httpx
import pytest
import uvicorn
from aiohttp import web
from hypothesis import settings as hypothesis_settings
from sqlalchemy.engine import make_url

from app import logging_setup
from app.config import Settings
from app.db.database import Database
from app.db.connection import DatabaseConfig
from app.db.statements import fetch, fetchval
from app.db.migrate import upgrade_sync
from app.main import create_app
from tests import api_contract

# Property tests: "ci" (the default) is deterministic and quick, a fixed example count with no
# deadline (a loaded machine must not fail a test) and no example database written to the tree;
# HYPOTHESIS_PROFILE=deep searches longer with fresh randomness.
hypothesis_settings.register_profile("ci", max_examples=200, deadline=None, derandomize=True, database=None)
hypothesis_settings.register_profile("deep", max_examples=20_000, deadline=None, database=None)
hypothesis_settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int | None:
    """On a server of the caller's (JOBWIRE_TEST_DATABASE_URL) the tests run in one process: the
    event feed lags behind the oldest write transaction open on the whole server (docs/guides/
    events.md), so another worker's transactions, in a database of its own, would hold back what a
    feed test waits for. Each worker of the embedded default has a server of its own. None: as
    many as pytest-xdist counts."""
    return 0 if os.environ.get("JOBWIRE_TEST_DATABASE_URL") else None


def pytest_configure(config: pytest.Config) -> None:
    """A worker of pytest-xdist (the suite runs in several: pyproject.toml) starts with COLUMNS=80
    and LINES=24 in its environment, which a one-process run does not have: the CLI's tables, run
    in the worker or in a process it starts, would wrap at 80 columns. The worker drops them."""
    if os.environ.get("PYTEST_XDIST_WORKER"):
        for name in ("COLUMNS", "LINES"):
            os.environ.pop(name, None)


TABLES = ("job_logs", "job_steps", "job_events", "job_executions", "job_schedule_fires", "job_schedules",
          "job_handler_secrets", "job_keys", "job_handler_flow", "job_debounce", "job_handlers", "job_queues",
          "job_server_heartbeats", "job_api_keys", "job_event_deliveries", "job_subscription_secrets",
          "job_subscriptions", "job_dependencies", "job_signals", "job_waits", "job_workflow_deltas",
          "job_workflows")


@pytest.fixture
def logging_restored() -> Iterator[None]:
    """Puts back what app.logging_setup.configure changes, for a test that runs it in this process
    (directly, or through a command such as `jobwire openapi`): the root logger's handlers and
    level, and the level, handlers and propagation of each logger it sets (alembic's among them:
    left at WARNING, it would hide the migrations' steps from a later test's caplog)."""
    root = logging.getLogger()
    names = (*logging_setup.JOBWIRE_LOGGERS, *logging_setup.UVICORN_LOGGERS, *logging_setup.NOISY_LOGGERS)
    root_handlers, root_level = list(root.handlers), root.level
    saved = {n: (logging.getLogger(n).level, list(logging.getLogger(n).handlers), logging.getLogger(n).propagate)
             for n in names}
    yield
    logging.captureWarnings(False)
    root.handlers[:] = root_handlers
    root.setLevel(root_level)
    for name, (level, handlers, propagate) in saved.items():
        logger = logging.getLogger(name)
        logger.setLevel(level)
        logger.handlers[:] = handlers
        logger.propagate = propagate


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def with_database(url: str, name: str) -> str:
    return make_url(url).set(database=name).render_as_string(hide_password=False)


@pytest.fixture(scope="session")
def server_url() -> Iterator[str]:
    """A PostgreSQL server: JOBWIRE_TEST_DATABASE_URL, or an embedded one for this session.

    The embedded one lives in a directory of its own under the system's temporary directory, not
    under pytest's: as root it runs as another user, and every pytest session that starts resets
    /tmp/pytest-of-<user> to mode 0700, which would cut a concurrent session's server off from its
    data."""
    external = os.environ.get("JOBWIRE_TEST_DATABASE_URL")
    if external:
        yield external
        return
    from app.db.embedded import EmbeddedPostgres

    base = Path(tempfile.mkdtemp(prefix="jobwire-test-pg-"))
    embedded = EmbeddedPostgres(base)
    try:
        yield embedded.start()
    finally:
        embedded.stop()
        shutil.rmtree(base, ignore_errors=True)


async def admin(server: str, sql: str) -> None:
    conn = await asyncpg.connect(make_url(server).set(drivername="postgresql").render_as_string(hide_password=False))
    try:
        await conn.execute(sql)
    finally:
        await conn.close()


@pytest.fixture(scope="session")
async def fresh_database(server_url: str) -> AsyncIterator[Callable[[], Awaitable[str]]]:
    """Creates empty databases on the test server (dropped at the end); returns their URLs."""
    created: list[str] = []

    async def make() -> str:
        name = f"jobwire_test_{os.getpid()}_{secrets.token_hex(4)}"
        await admin(server_url, f'CREATE DATABASE "{name}"')
        created.append(name)
        return with_database(server_url, name)

    yield make
    for name in created:
        await admin(server_url, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture(scope="session")
async def database_url(fresh_database: Callable[[], Awaitable[str]]) -> str:
    """The session's migrated database."""
    url = await fresh_database()
    await asyncio.to_thread(upgrade_sync, url, None)
    return url


@pytest.fixture(scope="session")
async def session_db(database_url: str) -> AsyncIterator[Database]:
    db = await Database.open(DatabaseConfig(url=database_url))
    yield db
    await db.close()


@pytest.fixture
async def db(session_db: Database) -> Database:
    """The session database with every job table emptied (job_meta keeps the server key)."""
    async with session_db.transaction() as conn:
        await conn.execute(f"TRUNCATE {', '.join(TABLES)}")
    return session_db


@asynccontextmanager
async def rolled_back(db: Database) -> AsyncIterator[Any]:
    """A pooled connection in a transaction that is rolled back at the end, whatever happened."""
    async with db.pool.acquire() as conn:
        transaction = conn.transaction()
        await transaction.start()
        try:
            yield conn
        finally:
            await transaction.rollback()


async def sql(db: Database, statement: str, **params: Any) -> list[Any]:
    """Run one statement (named parameters, `:id`) in its own transaction; its rows."""
    async with db.transaction() as conn:
        return list(await fetch(conn, statement, **params))


async def scalar(db: Database, statement: str, **params: Any) -> Any:
    """The first column of the first row of one statement (named parameters) in its own transaction."""
    async with db.transaction() as conn:
        return await fetchval(conn, statement, **params)


async def waits_for_a_lock(db: Database, holder: Any) -> None:
    """Returns once another session waits for a lock the session of connection `holder` holds."""
    pid = holder.get_server_pid()
    for _ in range(1000):
        if await scalar(db, "SELECT EXISTS (SELECT 1 FROM pg_stat_activity WHERE :pid = ANY(pg_blocking_pids(pid)))",
                        pid=pid):
            return
        await asyncio.sleep(0.01)
    raise AssertionError("no session waited for the lock")


def settings_for(database_url: str, **overrides: Any) -> Settings:
    values: dict[str, Any] = {
        "database_url": database_url,
        "migrate_on_start": False,
        "port": free_port(),
        "poll_interval": 0.2,
        "retry_base_delay": 0.05,
        "retry_max_delay": 0.2,
        "shutdown_grace": 2.0,
        "node_name": "test",
    }
    values.update(overrides)
    return Settings(**values)


@dataclass
class RunningServer:
    url: str
    app: Any
    settings: Settings
    server: uvicorn.Server
    task: asyncio.Task[None]

    async def stop(self) -> None:
        self.server.should_exit = True
        await self.task


async def start_server(settings: Settings, *, background: bool = True) -> RunningServer:
    """background=False: the API alone, for a server shared by tests that empty the tables
    (a claim running during TRUNCATE can deadlock with it)."""
    app = create_app(settings, background=background)
    config = uvicorn.Config(app, host="127.0.0.1", port=settings.port, log_level="warning",
                            lifespan="on", access_log=False)
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve())
    for _ in range(300):
        if server.started:
            break
        if task.done():
            task.result()
        await asyncio.sleep(0.02)
    else:
        raise RuntimeError("jobwire did not start")
    url = f"http://127.0.0.1:{settings.port}"
    api_contract.register(url, app, live=lambda: not server.should_exit)  # its 2xx bodies are checked
    return RunningServer(url, app, settings, server, task)


@pytest.fixture(autouse=True)
def response_contract() -> Iterator[None]:
    """Every 2xx JSON body a Jobwire server sends a test matches its route's declared response
    model (tests/api_contract.py)."""
    with api_contract.checking() as violations:
        yield
    assert not violations, "\n".join(violations)


@pytest.fixture(scope="module")
async def api_only_server(database_url: str) -> AsyncIterator[RunningServer]:
    """One server per test module serving the API alone (no dispatcher, no loops): what the
    tests store stays as it is, and starting a server per test would dominate the run time."""
    server = await start_server(settings_for(database_url), background=False)
    yield server
    await server.stop()


@pytest.fixture(scope="module")
async def boot_server(database_url: str) -> AsyncIterator[RunningServer]:
    """One API-only server per test module, closed by the bootstrap key `boot`."""
    server = await start_server(settings_for(database_url, api_keys=["boot"]), background=False)
    yield server
    await server.stop()


PROBLEM = "application/problem+json"


def problem_fields(response: httpx.Response, status: int) -> list[str]:
    """Asserts an RFC 9457 problem with this status; returns its `errors[].field` paths."""
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == PROBLEM
    body = response.json()
    assert body["status"] == status
    assert body["type"] and body["title"] and body["detail"]
    return [error["field"] for error in body.get("errors", [])]


@pytest.fixture
async def jobwire(db: Database, database_url: str) -> AsyncIterator[Callable[..., Awaitable[RunningServer]]]:
    """Starts real Jobwire servers (API + dispatcher) against the emptied session database."""
    running: list[RunningServer] = []

    async def start(**overrides: Any) -> RunningServer:
        server = await start_server(settings_for(database_url, **overrides))
        running.append(server)
        return server

    yield start
    for server in running:
        await server.stop()


@dataclass
class OwnDatabase:
    """A migrated database of one test's own, with the Jobwire servers started on it."""

    url: str
    db: Database
    servers: list[RunningServer] = field(default_factory=list)

    async def start(self, **overrides: Any) -> RunningServer:
        server = await start_server(settings_for(self.url, **overrides))
        self.servers.append(server)
        return server


@pytest.fixture
async def own_database(fresh_database: Callable[[], Awaitable[str]]) -> AsyncIterator[OwnDatabase]:
    """For tests whose servers run with JOBWIRE_SECRET_KEY: a node seals the session database's
    secrets under its key at start-up, and every later server without that key would refuse it."""
    url = await fresh_database()
    await asyncio.to_thread(upgrade_sync, url, None)
    own = OwnDatabase(url, await Database.open(DatabaseConfig(url=url)))
    yield own
    for server in own.servers:
        if not server.task.done():
            await server.stop()
    await own.db.close()


@pytest.fixture
async def api(jobwire: Callable[..., Awaitable[RunningServer]]) -> AsyncIterator[httpx.AsyncClient]:
    """An httpx client on one running Jobwire server with default test settings."""
    server = await jobwire()
    async with httpx.AsyncClient(base_url=server.url, timeout=10) as client:
        client.server = server  # type: ignore[attr-defined]
        yield client


Behaviour = Callable[[web.Request, dict[str, Any]], Awaitable[web.StreamResponse]]


@dataclass
class HandlerServer:
    """A real handler on loopback. Each path has a behaviour; every request is recorded."""

    url: str
    received: list[dict[str, Any]] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)
    bodies: list[bytes] = field(default_factory=list)
    behaviours: dict[str, Behaviour] = field(default_factory=dict)

    def route(self, path: str, behaviour: Behaviour) -> str:
        self.behaviours[path] = behaviour
        return f"{self.url}{path}"

    async def wait_for(self, count: int, timeout: float = 10.0) -> None:
        for _ in range(int(timeout / 0.02)):
            if len(self.received) >= count:
                return
            await asyncio.sleep(0.02)
        raise AssertionError(f"handler got {len(self.received)} requests, expected {count}")


async def reply_result(_: web.Request, job: dict[str, Any]) -> web.StreamResponse:
    return web.json_response({"result": job["payload"]})


@pytest.fixture
async def handler() -> AsyncIterator[HandlerServer]:
    port = free_port()
    hs = HandlerServer(url=f"http://127.0.0.1:{port}")

    async def dispatch(request: web.Request) -> web.StreamResponse:
        body = await request.read()
        job = await request.json()
        hs.received.append(job)
        hs.headers.append(dict(request.headers))
        hs.bodies.append(body)
        behaviour = hs.behaviours.get(request.path, reply_result)
        return await behaviour(request, job)

    app = web.Application()
    app.router.add_post("/{tail:.*}", dispatch)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", port)
    await site.start()
    yield hs
    await runner.cleanup()


async def register(client: httpx.AsyncClient, name: str, url: str, **extra: Any) -> dict[str, Any]:
    response = await client.put(f"/v1/handlers/{name}", json={"url": url, **extra})
    assert response.status_code in (200, 201), response.text
    return response.json()


async def wait_for_state(client: httpx.AsyncClient, execution_id: str, states: set[str] | str,
                         timeout: float = 10.0) -> dict[str, Any]:
    wanted = {states} if isinstance(states, str) else states
    body: dict[str, Any] = {}
    for _ in range(int(timeout / 0.02)):
        body = (await client.get(f"/v1/executions/{execution_id}")).json()
        if body.get("state") in wanted:
            return body
        await asyncio.sleep(0.02)
    raise AssertionError(f"execution {execution_id} stayed {body.get('state')}, expected {wanted}: {body}")


def settled_scanner(db: Database, node: str = "scanner-z", batch_size: int = 500,
                    heartbeat_timeout: float = 5.0) -> Any:
    """A CoordinationService of a node connected for far longer than a heartbeat timeout (the
    outage rule lets it judge other nodes at once)."""
    from datetime import UTC, datetime

    from app.domain.outage import OutageRule
    from app.services.coordination import CoordinationConfig, CoordinationService

    settled = OutageRule(heartbeat_timeout, healthy_since=datetime(2000, 1, 1, tzinfo=UTC))
    config = CoordinationConfig(node_id=node, heartbeat_timeout=heartbeat_timeout, batch_size=batch_size)
    return CoordinationService(db, config, outage=settled)
