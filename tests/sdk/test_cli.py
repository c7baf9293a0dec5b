"""The one `jobwire` command, owned by the SDK (issue 17, item 5): its client commands against a
real server and database, the service's `serve`, `migrate` and `openapi` reached through the
entry-point group `jobwire.commands`, and every failure said in one line on stderr with its exit
status (1 refused or unreachable, 2 usage), never a traceback.

End-to-end tests run the installed console script as a subprocess; the rest call `main` in a
thread (the server runs in the test's event loop, which a blocking call on it would stall)."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from importlib.metadata import EntryPoint
from pathlib import Path
from typing import Any

import httpx
import pytest
from aiohttp import web

from jobwire.cli import build_parser, main
from jobwire.cli.plugins import GROUP, load_commands
from tests.conftest import (
    HandlerServer,
    RunningServer,
    free_port,
    register,
    settings_for,
    start_server,
    wait_for_state,
)

JOBWIRE = str(Path(sys.executable).parent / "jobwire")


@dataclass
class Done:
    status: int
    out: str
    err: str

    def json(self) -> Any:
        return json.loads(self.out)

    def json_lines(self) -> list[Any]:
        return [json.loads(line) for line in self.out.splitlines()]


def environment(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.upper().startswith("JOBWIRE_")}
    env.update(extra)
    return env


async def jobwire_process(*args: str, timeout: float = 120, **env: str) -> Done:
    """The installed `jobwire` as a subprocess; its stderr never holds a traceback."""
    done = await asyncio.to_thread(subprocess.run, [JOBWIRE, *args], env=environment(**env), capture_output=True,
                                   text=True, timeout=timeout)
    assert "Traceback" not in done.stderr, done.stderr
    return Done(done.returncode, done.stdout, done.stderr)


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> Callable[..., Awaitable[Done]]:
    """`main([...])` in this process (in a thread), with JOBWIRE_* of the environment removed."""
    for name in list(os.environ):
        if name.upper().startswith("JOBWIRE_"):
            monkeypatch.delenv(name)

    async def run(*args: str) -> Done:
        capsys.readouterr()
        status = await asyncio.to_thread(main, list(args))
        out, err = capsys.readouterr()
        assert "Traceback" not in err, err
        return Done(status, out, err)

    return run


@pytest.fixture(scope="module")
async def server(database_url: str) -> AsyncIterator[RunningServer]:
    """The API without the dispatcher: what a command stores stays as it is."""
    running = await start_server(settings_for(database_url), background=False)
    yield running
    await running.stop()


@pytest.fixture
async def api(server: RunningServer, db: Any) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=server.url, timeout=30) as client:
        yield client


def unreachable_url() -> str:
    return f"http://127.0.0.1:{free_port()}"


# --- the command and its plugins -----------------------------------------------------------

async def test_the_service_commands_are_reached_through_the_sdk_command(tmp_path: Path) -> None:
    listed = await jobwire_process("--help")
    assert listed.status == 0
    for command in ("serve", "migrate", "openapi", "handlers", "jobs", "workflows", "executions", "events",
                    "subscriptions", "queues", "schedules", "status"):
        assert command in listed.out
    serve = await jobwire_process("serve", "--help")
    assert serve.status == 0 and "--log-level" in serve.out and "--port" in serve.out
    written = await jobwire_process("openapi", "--output", str(tmp_path / "api" / "openapi.json"))
    assert written.status == 0 and "wrote" in written.out
    document = json.loads((tmp_path / "api" / "openapi.json").read_text())
    assert "/v1/jobs" in document["paths"]


async def test_jobwire_migrate_brings_a_database_to_head(fresh_database: Callable[[], Awaitable[str]]) -> None:
    url = await fresh_database()
    done = await jobwire_process("migrate", JOBWIRE_DATABASE_URL=url)
    assert (done.status, done.out.strip()) == (0, "migrations at head"), done.err
    again = await jobwire_process("migrate", JOBWIRE_DATABASE_URL=url)
    assert again.status == 0


async def test_python_dash_m_jobwire_is_the_same_command() -> None:
    done = await asyncio.to_thread(subprocess.run, [sys.executable, "-m", "jobwire", "--version"],
                                   env=environment(), capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stdout.startswith("jobwire-sdk "), done.stderr
    assert "jobwire service" in done.stdout  # the service is installed beside the SDK here


def registrar_that_refuses(subparsers: Any) -> None:
    raise RuntimeError("this package is broken")


def interrupted_command(subparsers: Any) -> None:
    def run(_: Any) -> None:
        raise KeyboardInterrupt

    subparsers.add_parser("sleepy").set_defaults(run=run)


def test_an_entry_point_that_cannot_load_costs_only_its_own_command() -> None:
    found = [EntryPoint("gone", "no_such_module_anywhere:command", GROUP),
             EntryPoint("refuses", f"{__name__}:registrar_that_refuses", GROUP),
             EntryPoint("openapi", "app.cli:openapi_command", GROUP)]
    parser, _ = build_parser(plugins=False)
    subparsers = next(a for a in parser._actions if a.dest == "command")
    failures = load_commands(subparsers, found)
    assert len(failures) == 2
    assert failures[0].startswith("jobwire: command 'gone' (no_such_module_anywhere:command) not loaded: "
                                  "ModuleNotFoundError")
    assert "RuntimeError: this package is broken" in failures[1]
    assert all("\n" not in line for line in failures)
    assert parser.parse_args(["openapi", "--output", "x.json"]).output == "x.json"


async def test_a_broken_plugin_is_one_line_on_stderr_and_the_others_still_run(
        cli: Callable[..., Awaitable[Done]], monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
        logging_restored: None) -> None:
    installed = [EntryPoint("gone", "no_such_module_anywhere:command", GROUP),
                 EntryPoint("openapi", "app.cli:openapi_command", GROUP),
                 EntryPoint("sleepy", f"{__name__}:interrupted_command", GROUP)]
    monkeypatch.setattr("jobwire.cli.plugins.entry_points", lambda group: installed if group == GROUP else [])
    # `jobwire openapi` in this process configures logging (logging_restored puts it back)
    done = await cli("openapi", "--output", str(tmp_path / "openapi.json"))
    assert done.status == 0 and (tmp_path / "openapi.json").exists()
    [line] = done.err.splitlines()
    assert line.startswith("jobwire: command 'gone'")
    interrupted = await cli("sleepy")
    assert interrupted.status == 130 and interrupted.out == ""


# --- failures ------------------------------------------------------------------------------

async def test_a_usage_error_exits_2(cli: Callable[..., Awaitable[Done]]) -> None:
    for args in (["executions"], ["jobs", "enqueue", "h", "--payload", "{not json"], ["queues", "drain", "q"],
                 ["jobs", "enqueue", "--batch-size", "5000", "--from", "x.jsonl"]):
        with pytest.raises(SystemExit) as exited:
            await cli(*args)
        assert exited.value.code == 2, args
    done = await jobwire_process("jobs", "enqueue", "h", "--payload", "{not json")
    assert done.status == 2 and "not JSON" in done.err


async def test_a_refusal_is_one_line_on_stderr_and_exit_1(api: httpx.AsyncClient, server: RunningServer) -> None:
    missing = await jobwire_process("executions", "show", str(uuid.uuid4()), "--url", server.url)
    assert missing.status == 1 and missing.out == ""
    [line] = missing.err.splitlines()
    assert line.startswith("jobwire: 404 ")
    refused = await jobwire_process("jobs", "enqueue", "no-such-handler", "--json", JOBWIRE_URL=server.url)
    [line] = refused.err.splitlines()
    assert refused.status == 1 and line.startswith("jobwire: 422 ") and "handler: no handler named" in line, line


async def test_an_unreachable_server_is_one_line_on_stderr_and_exit_1() -> None:
    url = unreachable_url()
    for args in (["status"], ["handlers", "list", "--json"], ["jobs", "enqueue", "h"]):
        done = await jobwire_process(*args, JOBWIRE_URL=url)
        assert done.status == 1, done
        [line] = done.err.splitlines()
        assert line.startswith(f"jobwire: cannot reach {url}: "), line


async def test_url_and_api_key_come_from_the_environment(jobwire: Callable[..., Awaitable[RunningServer]]) -> None:
    running = await jobwire(api_keys=["s3cret"])
    keyed = await jobwire_process("handlers", "list", "--json", JOBWIRE_URL=running.url, JOBWIRE_API_KEY="s3cret")
    assert (keyed.status, keyed.out) == (0, "")
    anonymous = await jobwire_process("queues", "list", JOBWIRE_URL=running.url)
    [line] = anonymous.err.splitlines()
    assert anonymous.status == 1 and line.startswith("jobwire: 401 ")
    flag = await jobwire_process("queues", "list", "--json", "--api-key", "s3cret", "--url", running.url,
                                 JOBWIRE_URL=unreachable_url())
    assert flag.status == 0


# --- the client commands on a live server --------------------------------------------------

async def test_handlers_put_show_list_delete(cli: Callable[..., Awaitable[Done]], api: httpx.AsyncClient,
                                             server: RunningServer) -> None:
    url = ("--url", server.url)
    created = await cli("handlers", "put", "mailer", "http://127.0.0.1:9/mail", "--timeout-seconds", "5",
                        "--max-concurrency", "3", *url, "--json")
    assert created.status == 0
    handler = created.json()
    assert handler["secret"].startswith("whsec_") and handler["max_concurrency"] == 3
    shown = (await cli("handlers", "show", "mailer", *url, "--json")).json()
    assert shown["url"] == "http://127.0.0.1:9/mail" and "secret" not in shown
    [listed] = (await cli("handlers", "list", *url, "--json")).json_lines()
    assert listed["name"] == "mailer"
    table = await cli("handlers", "list", *url)
    assert "mailer" in table.out and "http://127.0.0.1:9/mail" in table.out
    deleted = await cli("handlers", "delete", "mailer", *url)
    assert deleted.status == 0 and "deleted handler mailer" in deleted.out
    gone = await cli("handlers", "show", "mailer", *url)
    assert gone.status == 1 and gone.err.startswith("jobwire: 404 ")


async def test_handlers_put_takes_flow_limits_and_a_bad_rate_limit_is_a_usage_error_naming_it(
        cli: Callable[..., Awaitable[Done]], api: httpx.AsyncClient, server: RunningServer) -> None:
    url = ("--url", server.url)
    put = await cli("handlers", "put", "mailer", "http://127.0.0.1:9/mail", "--key-concurrency", "2",
                    "--rate-limit", "20/1s", "--key-rate-limit", "100/1m", *url, "--json")
    assert put.status == 0, put.err
    handler = put.json()
    assert (handler["key_concurrency"], handler["rate_limit"], handler["key_rate_limit"]) == (
        2, {"limit": 20, "period_seconds": 1.0}, {"limit": 100, "period_seconds": 60.0})
    shown = await cli("handlers", "show", "mailer", *url)
    assert '"period_seconds":60.0' in shown.out.replace(" ", "")
    bare = await cli("handlers", "put", "mailer", "http://127.0.0.1:9/mail", "--rate-limit", "5000/1h",
                     "--key-rate-limit", "100/60", *url, "--json")
    assert (bare.json()["rate_limit"], bare.json()["key_rate_limit"], bare.json()["key_concurrency"]) == (
        {"limit": 5000, "period_seconds": 3600.0}, {"limit": 100, "period_seconds": 60.0}, None)

    bad = (("--rate-limit", "20", "not LIMIT/PERIOD"), ("--key-rate-limit", "0/1s", "the limit must be at least 1"),
           ("--rate-limit", "5/0", "the period must be more than 0 seconds"), ("--rate-limit", "5/1ms", "not LIMIT"),
           ("--rate-limit", "5/2d", "not LIMIT"), ("--key-concurrency", "0", "must be at least 1"))
    said = await asyncio.gather(*(jobwire_process("handlers", "put", "mailer", "http://127.0.0.1:9/mail", option,
                                                  value, JOBWIRE_URL=server.url) for option, value, _ in bad))
    for (option, value, reason), done in zip(bad, said, strict=True):
        assert done.status == 2 and done.out == "", (option, value, done)
        [line] = done.err.splitlines()
        assert line.startswith(f"jobwire: handlers put: argument {option}: {reason}"), line
    assert (await api.get("/v1/handlers/mailer")).json()["rate_limit"]["limit"] == 5000  # nothing was sent
    refused = await cli("handlers", "put", "mailer", "http://127.0.0.1:9/mail", "--rate-limit", "5/25h", *url)
    [line] = refused.err.splitlines()
    assert refused.status == 1 and line.startswith("jobwire: 422 ") and "rate_limit.period_seconds" in line, line


async def test_handlers_put_batch_takes_a_size_and_an_optional_wait(
        cli: Callable[..., Awaitable[Done]], server: RunningServer) -> None:
    url = ("--url", server.url)
    put = await cli("handlers", "put", "rows", "http://127.0.0.1:9/rows", "--batch", "50/200", *url, "--json")
    assert put.status == 0, put.err
    assert put.json()["batch"] == {"max_size": 50, "max_wait_ms": 200}
    bare = await cli("handlers", "put", "rows", "http://127.0.0.1:9/rows", "--batch", "5", *url, "--json")
    assert bare.json()["batch"] == {"max_size": 5, "max_wait_ms": 0}
    for value in ("0", "501", "5/1001", "five", "5/"):
        done = await jobwire_process("handlers", "put", "rows", "http://127.0.0.1:9/rows", "--batch", value,
                                     JOBWIRE_URL=server.url)
        assert done.status == 2 and done.out == "", (value, done)
        assert done.err.startswith("jobwire: handlers put: argument --batch: "), done.err


async def test_jobs_enqueue_takes_a_concurrency_key_and_handlers_keys_lists_pauses_and_resumes_them(
        cli: Callable[..., Awaitable[Done]], api: httpx.AsyncClient, server: RunningServer) -> None:
    url = ("--url", server.url)
    await register(api, "mailer", "http://127.0.0.1:9/mail")
    for key in ("acme", "acme", "globex", "initech"):
        done = await cli("jobs", "enqueue", "mailer", "--concurrency-key", key, *url, "--json")
        assert done.status == 0 and done.json()["concurrency_key"] == key
    listed = (await cli("handlers", "keys", "mailer", *url, "--json")).json_lines()
    assert [(k["key"], k["waiting"], k["in_flight"], k["paused"]) for k in listed] == [
        ("acme", 2, 0, False), ("globex", 1, 0, False), ("initech", 1, 0, False)]
    first = (await cli("handlers", "keys", "mailer", "--limit", "2", *url, "--json")).json_lines()
    assert [k["key"] for k in first] == ["acme", "globex"]

    paused = await cli("handlers", "pause-key", "mailer", "globex", *url, "--json")
    assert paused.status == 0 and (paused.json()["key"], paused.json()["paused"]) == ("globex", True)
    only = (await cli("handlers", "keys", "mailer", "--state", "paused", *url, "--json")).json_lines()
    assert [k["key"] for k in only] == ["globex"]
    table = await cli("handlers", "keys", "mailer", "--state", "throttled", *url)
    assert table.status == 0 and "in_flight" in table.out and "globex" in table.out and "acme" not in table.out
    resumed = await cli("handlers", "resume-key", "mailer", "globex", *url)
    assert resumed.status == 0 and "globex" in resumed.out
    assert (await cli("handlers", "keys", "mailer", "--state", "paused", *url)).out.strip() == "none"

    missing = await cli("handlers", "keys", "nobody", *url)
    assert missing.status == 1 and missing.err.startswith("jobwire: 404 ") and len(missing.err.splitlines()) == 1
    bad_key = await cli("handlers", "pause-key", "mailer", "bad key", *url)
    assert bad_key.status == 1 and bad_key.err.startswith("jobwire: 422 ")
    with pytest.raises(SystemExit) as usage:
        await cli("handlers", "keys", "mailer", "--state", "sleeping", *url)
    assert usage.value.code == 2


async def test_handlers_put_adaptive_shows_its_limit_and_circuit_and_needs_a_max_concurrency(
        cli: Callable[..., Awaitable[Done]], api: httpx.AsyncClient, server: RunningServer) -> None:
    url = ("--url", server.url)
    put = await cli("handlers", "put", "mailer", "http://127.0.0.1:9/mail", "--max-concurrency", "10", "--adaptive",
                    *url, "--json")
    assert put.status == 0, put.err
    assert (put.json()["adaptive"], put.json()["circuit"]) == (
        {"limit": 4, "since": None}, {"state": "closed", "until": None, "failures": 0})
    shown = await cli("handlers", "show", "mailer", *url)
    assert shown.status == 0 and "adaptive" in shown.out and '"state":"closed"' in shown.out.replace(" ", "")
    plain = await cli("handlers", "put", "mailer", "http://127.0.0.1:9/mail", "--max-concurrency", "10", *url,
                      "--json")
    assert plain.json()["adaptive"] is None  # the PUT is the whole definition
    refused = await cli("handlers", "put", "mailer", "http://127.0.0.1:9/mail", "--adaptive", *url)
    [line] = refused.err.splitlines()
    assert refused.status == 1 and line.startswith("jobwire: 422 ") and "adaptive" in line, line


async def test_jobs_enqueue_debounces_into_the_waiting_execution(cli: Callable[..., Awaitable[Done]],
                                                                 api: httpx.AsyncClient,
                                                                 server: RunningServer) -> None:
    url = ("--url", server.url)
    await register(api, "indexer", "http://127.0.0.1:9/index")
    debounce = ("--debounce-key", "reindex:42", "--debounce-delay", "3600")
    first = await cli("jobs", "enqueue", "indexer", "--payload", '{"v": 1}', *debounce, *url, "--json")
    assert first.status == 0, first.err
    assert (first.json()["debounced"], first.json()["state"]) == (False, "ENQUEUED")
    second = await cli("jobs", "enqueue", "indexer", "--payload", '{"v": 2}', *debounce, "--debounce-max-delay",
                       "7200", "--debounce-mode", "trailing", *url, "--json")
    assert second.status == 0, second.err
    assert (second.json()["debounced"], second.json()["id"], second.json()["payload"]) == (
        True, first.json()["id"], {"v": 2})
    listed = (await api.get("/v1/executions", params={"handler": "indexer"})).json()["items"]
    assert [e["id"] for e in listed] == [first.json()["id"]]
    table = await cli("jobs", "enqueue", "indexer", *debounce, *url)
    assert table.status == 0 and "debounced" in table.out
    older = await jobwire_process("enqueue", "indexer", "--debounce-key", "other", "--debounce-delay", "60",
                                  "--debounce-mode", "leading", JOBWIRE_URL=server.url)
    assert older.status == 0 and older.json()["debounced"] is False and older.json()["id"] != first.json()["id"]
    plain = await cli("jobs", "enqueue", "indexer", *url, "--json")
    assert "debounced" not in plain.json()


async def test_debounce_options_go_together_and_with_one_job_else_a_usage_error(tmp_path: Path) -> None:
    jobs = tmp_path / "jobs.jsonl"
    jobs.write_text('{"handler": "h"}\n')
    bad = ((["--debounce-key", "k"], "--debounce-key needs --debounce-delay SECONDS"),
           (["--debounce-delay", "5"], "--debounce-delay needs --debounce-key KEY"),
           (["--debounce-mode", "leading"], "--debounce-mode needs --debounce-key KEY and --debounce-delay SECONDS"),
           (["--debounce-max-delay", "9", "--debounce-mode", "leading"],
            "--debounce-max-delay and --debounce-mode need --debounce-key KEY and --debounce-delay SECONDS"),
           (["--debounce-key", "k", "--debounce-delay", "0"], "argument --debounce-delay: must be more than 0"),
           (["--debounce-key", "k", "--debounce-delay", "5", "--debounce-mode", "sideways"],
            "argument --debounce-mode: invalid choice: 'sideways'"),
           (["--debounce-key", "k", "--debounce-delay", "5", "--delay-seconds", "5"],
            "argument --delay-seconds: not allowed with argument --debounce-key"),
           (["--debounce-key", "k", "--debounce-delay", "5", "--from", str(jobs)],
            "--debounce-key debounces one job: not with --from"))
    said = await asyncio.gather(*(jobwire_process("jobs", "enqueue", *([] if "--from" in args else ["h"]), *args,
                                                  JOBWIRE_URL=unreachable_url()) for args, _ in bad))
    for (args, reason), done in zip(bad, said, strict=True):
        assert done.status == 2 and done.out == "", (args, done)
        [line] = done.err.splitlines()
        assert line.startswith(f"jobwire: jobs enqueue: {reason}"), (args, line)
    older = await jobwire_process("enqueue", "h", "--debounce-delay", "5", JOBWIRE_URL=unreachable_url())
    assert older.status == 2 and older.err.startswith("jobwire: enqueue: --debounce-delay needs --debounce-key")


async def test_executions_blockers_names_a_paused_key(cli: Callable[..., Awaitable[Done]], api: httpx.AsyncClient,
                                                     server: RunningServer) -> None:
    await register(api, "mailer", "http://127.0.0.1:9/mail")
    assert (await cli("handlers", "pause-key", "mailer", "acme", "--url", server.url)).status == 0
    job = await cli("jobs", "enqueue", "mailer", "--concurrency-key", "acme", "--url", server.url, "--json")
    found = (await cli("executions", "blockers", job.json()["id"], "--url", server.url, "--json")).json()
    assert {"reason": "key_paused", "key": "acme"} in found["items"]  # beside no_node_serves_queue: no dispatcher
    shown = await cli("executions", "blockers", job.json()["id"], "--url", server.url)
    assert shown.status == 0 and "key_paused" in shown.out and "acme" in shown.out

async def test_jobs_enqueue_and_the_older_enqueue_print_the_execution(
        cli: Callable[..., Awaitable[Done]], api: httpx.AsyncClient, server: RunningServer) -> None:
    await register(api, "mailer", "http://127.0.0.1:9/mail")
    one = await cli("jobs", "enqueue", "mailer", "--payload", '{"to": "a@example.com"}', "--queue", "mail",
                    "--priority", "7", "--url", server.url, "--json")
    execution = one.json()
    assert (execution["state"], execution["queue"], execution["priority"]) == ("ENQUEUED", "mail", 7)
    assert execution["payload"] == {"to": "a@example.com"}
    table = await cli("jobs", "enqueue", "mailer", "--url", server.url)
    assert table.status == 0 and "ENQUEUED" in table.out

    before = await jobwire_process("enqueue", "mailer", "--payload", "[1, 2]", "--queue", "old", JOBWIRE_URL=server.url)
    assert before.status == 0 and before.out.startswith("{\n  ")  # indented JSON, as it always was
    old = before.json()
    assert (old["handler"], old["queue"], old["payload"]) == ("mailer", "old", [1, 2])
    shown = await jobwire_process("status", old["id"], "--url", server.url)
    assert shown.status == 0 and shown.json()["id"] == old["id"]


async def test_executions_list_show_cancel_retry(cli: Callable[..., Awaitable[Done]], api: httpx.AsyncClient,
                                                 server: RunningServer) -> None:
    url = ("--url", server.url)
    await register(api, "mailer", "http://127.0.0.1:9/mail")
    ids = [(await api.post("/v1/jobs", json={"handler": "mailer", "queue": q})).json()["id"]
           for q in ("a", "a", "b")]
    listed = (await cli("executions", "list", *url, "--json")).json_lines()
    assert [e["id"] for e in listed] == ids[::-1]  # newest first
    only_a = (await cli("executions", "list", "--queue", "a", "--limit", "1", *url, "--json")).json_lines()
    assert [e["id"] for e in only_a] == [ids[1]]
    assert ids[0] in (await cli("executions", "list", *url)).out
    assert (await cli("executions", "show", ids[0], *url, "--json")).json()["state"] == "ENQUEUED"
    assert (await cli("executions", "cancel", ids[0], *url, "--json")).json()["state"] == "CANCELLED"
    again = await cli("executions", "cancel", ids[0], *url)
    assert again.status == 1 and again.err.startswith("jobwire: 409 ") and len(again.err.splitlines()) == 1
    retried = await cli("executions", "retry", ids[0], *url)
    assert retried.status == 0 and "ENQUEUED" in retried.out


async def test_executions_blockers_says_what_holds_a_job_back(cli: Callable[..., Awaitable[Done]],
                                                              api: httpx.AsyncClient, server: RunningServer) -> None:
    url = ("--url", server.url)
    await register(api, "mailer", "http://127.0.0.1:9/mail")
    job = (await api.post("/v1/jobs", json={"handler": "mailer", "queue": "held",
                                            "run_at": "2999-01-01T00:00:00Z"})).json()
    assert (await api.post("/v1/queues/held/pause")).status_code == 200
    found = (await cli("executions", "blockers", job["id"], *url, "--json")).json()
    assert [item["reason"] for item in found["items"]][:2] == ["scheduled", "queue_paused"]
    shown = await cli("executions", "blockers", job["id"], *url)
    assert shown.status == 0 and "queue_paused" in shown.out and "held" in shown.out
    await api.post(f"/v1/executions/{job['id']}/cancel")
    done = await cli("executions", "blockers", job["id"], *url)
    assert done.status == 0 and "CANCELLED: nothing holds it back" in done.out


async def test_executions_attempts_and_logs_of_a_dispatched_job(
        cli: Callable[..., Awaitable[Done]], jobwire: Callable[..., Awaitable[RunningServer]],
        handler: HandlerServer) -> None:
    async def logs_then_succeeds(_: web.Request, job: dict[str, Any]) -> web.StreamResponse:
        async with httpx.AsyncClient() as client:
            await client.post(f"{job['callback']['url']}/logs",
                              headers={"authorization": f"Bearer {job['callback']['token']}"},
                              json={"entries": [{"level": "INFO", "message": "sent [bold]the mail[/bold]"}]})
        return web.json_response({"result": "ok"})

    running = await jobwire()
    async with httpx.AsyncClient(base_url=running.url, timeout=30) as api:
        await register(api, "mailer", handler.route("/mail", logs_then_succeeds))
        job = (await api.post("/v1/jobs", json={"handler": "mailer"})).json()
        await wait_for_state(api, job["id"], "SUCCEEDED")
    url = ("--url", running.url)
    [attempt] = (await cli("executions", "attempts", job["id"], *url, "--json")).json_lines()
    assert (attempt["attempt"], attempt["state"], attempt["http_status"]) == (0, "SUCCEEDED", 200)
    [entry] = (await cli("executions", "logs", job["id"], *url, "--json")).json_lines()
    assert entry["message"] == "sent [bold]the mail[/bold]"
    shown = await cli("executions", "logs", job["id"], *url)
    assert "sent [bold]the mail[/bold]" in shown.out  # shown as sent, not read as markup


async def test_queues_list_pause_resume(cli: Callable[..., Awaitable[Done]], api: httpx.AsyncClient,
                                        server: RunningServer) -> None:
    url = ("--url", server.url)
    await register(api, "mailer", "http://127.0.0.1:9/mail")
    await api.post("/v1/jobs", json={"handler": "mailer", "queue": "mail"})
    assert (await cli("queues", "pause", "mail", *url, "--json")).json()["paused"] is True
    [queue] = [q for q in (await cli("queues", "list", *url, "--json")).json_lines() if q["name"] == "mail"]
    assert queue["paused"] is True and queue["counts"]["ENQUEUED"] == 1
    assert "mail" in (await cli("queues", "list", *url)).out
    assert (await cli("queues", "resume", "mail", *url, "--json")).json()["paused"] is False


async def test_schedules_put_list_show_preview_trigger_delete(
        cli: Callable[..., Awaitable[Done]], api: httpx.AsyncClient, server: RunningServer) -> None:
    url = ("--url", server.url)
    await register(api, "reports", "http://127.0.0.1:9/reports")
    put = await cli("schedules", "put", "nightly", "--cron", "0 3 * * *", "--handler", "reports",
                    "--timezone", "Europe/Paris", "--payload", '{"kind": "daily"}', "--no-enabled", *url, "--json")
    schedule = put.json()
    assert (schedule["job_id"], schedule["timezone"], schedule["enabled"]) == ("nightly", "Europe/Paris", False)
    [listed] = (await cli("schedules", "list", *url, "--json")).json_lines()
    assert listed["job_id"] == "nightly"
    assert (await cli("schedules", "show", "nightly", *url, "--json")).json()["cron"] == "0 3 * * *"
    fires = (await cli("schedules", "preview", "nightly", "--count", "3", *url, "--json")).json_lines()
    assert len(fires) == 3 and all(fire.endswith(("+00:00", "Z")) for fire in fires)
    assert "next fire" in (await cli("schedules", "preview", "nightly", *url)).out
    fired = (await cli("schedules", "trigger", "nightly", *url, "--json")).json()
    assert (fired["job_id"], fired["payload"]) == ("nightly", {"kind": "daily"})
    assert (await cli("schedules", "delete", "nightly", *url)).status == 0
    assert (await cli("schedules", "show", "nightly", *url)).status == 1


async def test_status_shows_queues_nodes_and_recent_failures(
        cli: Callable[..., Awaitable[Done]], jobwire: Callable[..., Awaitable[RunningServer]],
        handler: HandlerServer) -> None:
    async def fails(_: web.Request, job: dict[str, Any]) -> web.StreamResponse:
        return web.json_response({"error": "no"}, status=500)

    running = await jobwire(node_name="cli-node")
    async with httpx.AsyncClient(base_url=running.url, timeout=30) as api:
        await register(api, "flaky", handler.route("/flaky", fails))
        job = (await api.post("/v1/jobs", json={"handler": "flaky", "max_attempts": 1})).json()
        await wait_for_state(api, job["id"], "DEAD_LETTER")
    document = (await cli("status", "--url", running.url, "--json")).json()
    assert [f["id"] for f in document["recent_failures"]] == [job["id"]]
    assert any(q["name"] == "default" for q in document["queues"])
    assert document["nodes"] and all("server_id" in n for n in document["nodes"])
    tables = await cli("status", "--url", running.url)
    assert tables.status == 0
    for seen in ("queues", "nodes", "recent failures", job["id"], "default"):
        assert seen in tables.out
    assert all(len(line) <= 200 for line in tables.out.splitlines())


# --- bulk enqueue from a file --------------------------------------------------------------

async def test_ten_thousand_jobs_from_a_jsonl_file_are_all_enqueued(api: httpx.AsyncClient, server: RunningServer,
                                                                    tmp_path: Path) -> None:
    await register(api, "mailer", "http://127.0.0.1:9/mail")
    jobs = tmp_path / "jobs.jsonl"
    jobs.write_text("".join(json.dumps({"handler": "mailer", "queue": "bulk", "payload": {"n": n},
                                        "idempotency_key": f"mail-{n}"}) + "\n" for n in range(10_000)))
    done = await jobwire_process("jobs", "enqueue", "--from", str(jobs), "--url", server.url, timeout=300)
    assert done.status == 0, done.err
    assert done.out.strip() == f"{jobs}: 10000 created, 0 existing, 0 failed (done)"
    [queue] = [q for q in (await api.get("/v1/queues")).json()["items"] if q["name"] == "bulk"]
    assert queue["counts"]["ENQUEUED"] == 10_000

    # The same file again: every key finds its execution, nothing is inserted twice.
    again = await jobwire_process("jobs", "enqueue", "--from", str(jobs), "--batch-size", "1000",
                                  "--url", server.url, "--json", timeout=300)
    assert again.status == 0 and again.json() == {"created": 0, "existing": 10_000, "failed": 0, "complete": True}
    [queue] = [q for q in (await api.get("/v1/queues")).json()["items"] if q["name"] == "bulk"]
    assert queue["counts"]["ENQUEUED"] == 10_000


async def test_bad_lines_fail_alone_and_the_rest_of_their_batch_is_enqueued(
        cli: Callable[..., Awaitable[Done]], api: httpx.AsyncClient, server: RunningServer, tmp_path: Path) -> None:
    await register(api, "mailer", "http://127.0.0.1:9/mail")
    jobs = tmp_path / "jobs.jsonl"
    jobs.write_text("\n".join([
        '{"payload": 1}',
        '{"payload": 2, "handler": "no-such-handler"}',
        "{not json",
        "",
        '[1, 2]',
        '{"payload": 5, "queue": "other"}',
    ]) + "\n")
    done = await cli("jobs", "enqueue", "mailer", "--queue", "imported", "--from", str(jobs), "--url", server.url,
                     "--json")
    assert done.status == 1
    assert done.json() == {"created": 2, "existing": 0, "failed": 3, "complete": True}
    failures = done.err.splitlines()
    said = [line.removeprefix(f"jobwire: {jobs}: ").split(":")[0] for line in failures]
    assert said == ["line 2", "line 3", "line 5"]
    assert failures[0].startswith(f"jobwire: {jobs}: line 2: handler: ")
    listed = (await api.get("/v1/executions")).json()["items"]
    assert sorted((e["queue"], e["payload"]) for e in listed) == [("imported", 1), ("other", 5)]


async def test_a_file_that_cannot_be_read_is_one_line(cli: Callable[..., Awaitable[Done]], tmp_path: Path) -> None:
    done = await cli("jobs", "enqueue", "--from", str(tmp_path / "missing.jsonl"), "--url", unreachable_url())
    assert done.status == 1
    [line] = done.err.splitlines()
    assert line.startswith("jobwire: No such file or directory: ") and "missing.jsonl" in line


# --- what an operator does (issue 21, new-user item 5) ------------------------------------------

async def test_global_options_go_before_or_after_the_command(cli: Callable[..., Awaitable[Done]],
                                                            api: httpx.AsyncClient, server: RunningServer) -> None:
    await register(api, "mailer", "http://127.0.0.1:9/mail")
    elsewhere = unreachable_url()
    for args in (["--json", "--url", server.url, "handlers", "list"],
                 ["handlers", "list", "--json", "--url", server.url],
                 ["handlers", "--json", "list", f"--url={server.url}"],
                 ["--url", elsewhere, "--timeout", "5", "handlers", "list", "--url", server.url, "--json"]):
        done = await cli(*args)
        assert done.status == 0, (args, done.err)
        assert [h["name"] for h in done.json_lines()] == ["mailer"], args
    shown = await jobwire_process("--url", server.url, "--json", "status", JOBWIRE_URL=elsewhere)
    assert shown.status == 0 and "queues" in shown.json()


async def test_a_bad_url_a_malformed_id_and_bad_json_are_each_one_line_and_a_usage_error(
        cli: Callable[..., Awaitable[Done]]) -> None:
    for args, said in ((["--url", "htp://example.com", "queues", "list"], "--url: Jobwire's URL is http(s)://"),
                       (["queues", "list", "--url", "127.0.0.1:8000"], "--url: Jobwire's URL is http(s)://"),
                       (["executions", "show", "not-an-id"], "argument EXECUTION_ID: not an execution id"),
                       (["executions", "bulk-retry", "1234"], "argument ID: not an execution id"),
                       (["api-keys", "delete", "x"], "argument KEY_ID: not an API key id"),
                       (["workflows", "show", "x"], "argument WORKFLOW_ID: not a workflow id"),
                       (["jobs", "enqueue", "h", "--payload", "{not json"], "argument --payload: not JSON"),
                       (["jobs", "enqueue", "h", "--payload", '{"amount": NaN}'], "NaN is not a JSON number"),
                       (["jobs", "enqueue", "h", "--payload", "1e400"], "1e400 overflows a float"),
                       (["executions", "list", "--metadata", "no-colon"], "argument --metadata: not KEY:VALUE"),
                       (["executions", "list", "--created-after", "2026-12-01T00:00:00"],
                        "argument --created-after: give its offset"),
                       (["executions", "list", "--created-before", "soon"],
                        "argument --created-before: not an RFC 3339 time")):
        done = await jobwire_process(*args, JOBWIRE_URL=unreachable_url())
        assert done.status == 2 and done.out == "", (args, done)
        [line] = done.err.splitlines()
        assert line.startswith("jobwire: ") and said in line, (args, line)


@pytest.fixture
async def not_jobwire() -> AsyncIterator[dict[str, str]]:
    """A web server answering 404 with a page for every path, and TCP ports speaking other protocols:
    one answers lines, one a line and hangs up."""
    async def page(_: web.Request) -> web.Response:
        return web.Response(status=404, text="<html><body><h1>Not Found</h1>\n</body></html>", content_type="text/html")

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", page)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    web_port, chatty_port, curt_port = free_port(), free_port(), free_port()
    await web.TCPSite(runner, "127.0.0.1", web_port).start()

    def speaking(reply: bytes) -> Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]:
        async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            await reader.read(65536)
            writer.write(reply)
            await writer.drain()
            writer.close()
        return answer

    chatty = await asyncio.start_server(speaking(b"220 mail.example.com ESMTP\r\n500 what?\r\n\r\n"), "127.0.0.1",
                                        chatty_port)
    curt = await asyncio.start_server(speaking(b"-ERR unknown command 'GET'\r\n"), "127.0.0.1", curt_port)
    yield {"web": f"http://127.0.0.1:{web_port}", "chatty": f"http://127.0.0.1:{chatty_port}",
           "curt": f"http://127.0.0.1:{curt_port}"}
    chatty.close()
    curt.close()
    await runner.cleanup()


async def test_a_server_that_is_not_jobwire_is_one_plain_line(cli: Callable[..., Awaitable[Done]],
                                                             not_jobwire: dict[str, str]) -> None:
    for args in (["handlers", "list"], ["jobs", "enqueue", "h"], ["handlers", "put", "h", "http://127.0.0.1:9/"]):
        page = await cli(*args, "--url", not_jobwire["web"])
        [line] = page.err.splitlines()
        assert page.status == 1 and line == (f"jobwire: {not_jobwire['web']} is not Jobwire, or not all of it: it "
                                             "answered 404 Not Found without a problem document"), line
    chatty = await cli("queues", "list", "--url", not_jobwire["chatty"])
    [line] = chatty.err.splitlines()
    assert chatty.status == 1 and line.startswith(f"jobwire: {not_jobwire['chatty']} is not Jobwire: it does not "
                                                  "answer in HTTP"), line
    curt = await cli("queues", "list", "--url", not_jobwire["curt"])
    [line] = curt.err.splitlines()
    assert curt.status == 1 and line.startswith(f"jobwire: {not_jobwire['curt']} hung up without an HTTP answer: "
                                                "is it Jobwire's URL?"), line


async def test_executions_delete_and_events(cli: Callable[..., Awaitable[Done]], api: httpx.AsyncClient,
                                            server: RunningServer) -> None:
    url = ("--url", server.url)
    await register(api, "mailer", "http://127.0.0.1:9/mail")
    job = (await api.post("/v1/jobs", json={"handler": "mailer"})).json()
    await api.post(f"/v1/executions/{job['id']}/cancel")
    [event] = (await cli("executions", "events", job["id"], *url, "--json")).json_lines()
    assert (event["type"], event["data"]["new_state"]) == ("execution.cancelled", "CANCELLED")
    table = await cli("executions", "events", job["id"], *url)
    assert "execution.cancelled" in table.out and "new_state" in table.out
    deleted = await cli("executions", "delete", job["id"], *url)
    assert deleted.status == 0 and deleted.out.strip() == f"deleted execution {job['id']}"
    again = await cli("executions", "delete", job["id"], *url, "--json")
    assert again.status == 1 and again.err.startswith("jobwire: 404 ")


async def test_executions_signal_and_signals(cli: Callable[..., Awaitable[Done]], api: httpx.AsyncClient,
                                            server: RunningServer) -> None:
    url = ("--url", server.url)
    await register(api, "mailer", "http://127.0.0.1:9/mail")
    job = (await api.post("/v1/jobs", json={"handler": "mailer", "run_at": "2999-01-01T00:00:00Z"})).json()
    sent = (await cli("executions", "signal", job["id"], "approved", "--payload", '{"by": "ana"}', *url,
                      "--json")).json()
    assert sent["woke"] is False and isinstance(sent["id"], int)
    said = await cli("executions", "signal", job["id"], "note", *url)
    assert said.status == 0
    assert said.out.strip().startswith(f"sent signal note (id {sent['id'] + 1}) to execution {job['id']}: kept")
    listed = (await cli("executions", "signals", job["id"], *url, "--json")).json_lines()
    assert [(s["id"], s["name"], s["payload"], s["consumed_at"]) for s in listed] == [
        (sent["id"], "approved", {"by": "ana"}, None), (sent["id"] + 1, "note", None, None)]
    table = await cli("executions", "signals", job["id"], *url)
    assert table.out.splitlines()[0].split() == ["id", "name", "sent_at", "consumed_at", "payload"]
    assert '{"by":"ana"}' in table.out
    await api.post(f"/v1/executions/{job['id']}/cancel")
    refused = await cli("executions", "signal", job["id"], "approved", *url)
    assert refused.status == 1 and refused.err.startswith("jobwire: 409 ") and len(refused.err.splitlines()) == 1
    bad = await jobwire_process("executions", "signal", job["id"], "approved", "--payload", "{not json",
                                JOBWIRE_URL=server.url)
    assert bad.status == 2 and "argument --payload: not JSON" in bad.err


async def test_executions_blockers_shows_a_suspended_job_and_signal_wakes_it(
        cli: Callable[..., Awaitable[Done]], jobwire: Callable[..., Awaitable[RunningServer]],
        handler: HandlerServer) -> None:
    async def approval(_: web.Request, job: dict[str, Any]) -> web.StreamResponse:
        if job.get("resume") is None:
            return web.json_response({"suspend": {"signals": ["approved"], "timeout_seconds": 600}})
        return web.json_response({"result": job["resume"]["signals"][0]["payload"]})

    running = await jobwire()
    url = ("--url", running.url)
    async with httpx.AsyncClient(base_url=running.url, timeout=30) as api:
        await register(api, "approval", handler.route("/approval", approval))
        job = (await api.post("/v1/jobs", json={"handler": "approval"})).json()
        await wait_for_state(api, job["id"], "WAITING")
        blockers = (await cli("executions", "blockers", job["id"], *url, "--json")).json()
        [blocker] = blockers["items"]
        assert (blockers["state"], blocker["reason"], blocker["signals"]) == ("WAITING", "suspended", ["approved"])
        shown = await cli("executions", "blockers", job["id"], *url)
        assert "suspended" in shown.out and "timeout_at" in shown.out and '["approved"]' in shown.out
        woke = await cli("executions", "signal", job["id"], "approved", "--payload", '"yes"', *url)
        assert woke.status == 0 and woke.out.strip().endswith("it woke the execution")
        done = await wait_for_state(api, job["id"], "SUCCEEDED")
    assert done["result"] == "yes"
    [consumed] = (await cli("executions", "signals", job["id"], *url, "--json")).json_lines()
    assert consumed["consumed_at"] is not None


async def cancelled(api: httpx.AsyncClient, **fields: Any) -> str:
    """A job of `mailer` enqueued for later and cancelled: one execution.cancelled event."""
    job = (await api.post("/v1/jobs", json={"handler": "mailer", "run_at": "2999-01-01T00:00:00Z", **fields})).json()
    assert (await api.post(f"/v1/executions/{job['id']}/cancel")).status_code == 200
    return str(job["id"])


async def test_events_list_shows_a_page_and_the_cursor_the_next_starts_at(
        cli: Callable[..., Awaitable[Done]], api: httpx.AsyncClient, server: RunningServer) -> None:
    url = ("--url", server.url)
    await register(api, "mailer", "http://127.0.0.1:9/mail")
    ids = [await cancelled(api, queue=q) for q in ("a", "a", "b")]
    first = (await cli("events", "list", "--limit", "2", *url, "--json")).json()
    assert [e["data"]["execution_id"] for e in first["items"]] == ids[:2] and first["next_cursor"]
    rest = (await cli("events", "list", "--after", first["next_cursor"], *url, "--json")).json()
    assert [e["data"]["execution_id"] for e in rest["items"]] == ids[2:]
    table = await cli("events", "list", "--after", first["next_cursor"], *url)
    assert table.status == 0, table.err
    assert ids[2] in table.out and "execution.cancelled" in table.out
    header = table.out.splitlines()[0].split()
    assert header == ["id", "type", "occurred_at", "execution_id", "queue", "handler"]
    assert table.out.splitlines()[-1] == f"next cursor: {rest['next_cursor']}"
    end = await cli("events", "list", "--after", rest["next_cursor"], *url)
    assert end.out.splitlines() == ["no events", f"next cursor: {rest['next_cursor']}"]  # where to ask again
    only_a = (await cli("events", "list", "--queue", "a", "--handler", "mailer", "--types",
                        "execution.cancelled, execution.retried", *url, "--json")).json()
    assert [e["data"]["execution_id"] for e in only_a["items"]] == ids[:2]
    assert (await cli("events", "list", "--types", "execution.retried", *url, "--json")).json()["items"] == []
    unknown = await cli("events", "list", "--types", "execution.exploded", *url)
    assert unknown.status == 1 and unknown.err.startswith("jobwire: 422 ") and "types" in unknown.err
    empty = await cli("events", "list", "--types", ",", *url)
    assert (empty.status, empty.err.strip()) == (2, "jobwire: --types: names no event type: ','")


async def test_events_tail_prints_each_event_as_a_json_line_until_interrupted_then_its_cursor(
        api: httpx.AsyncClient, server: RunningServer) -> None:
    await register(api, "mailer", "http://127.0.0.1:9/mail")
    before = await cancelled(api)
    tail = await asyncio.create_subprocess_exec(
        JOBWIRE, "events", "tail", "--poll", "0.05", "--types", "execution.cancelled", "--url", server.url,
        env=environment(), stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    try:
        assert tail.stdout is not None and tail.stderr is not None
        first = json.loads(await asyncio.wait_for(tail.stdout.readline(), 60))  # from the oldest stored event
        assert (first["type"], first["data"]["execution_id"]) == ("execution.cancelled", before)
        made = await cancelled(api)
        later = json.loads(await asyncio.wait_for(tail.stdout.readline(), 30))  # polled for
        assert set(later) == {"id", "type", "occurred_at", "data"} and later["data"]["execution_id"] == made
    finally:
        if tail.returncode is None:
            tail.send_signal(signal.SIGINT)
    status = await asyncio.wait_for(tail.wait(), 30)
    err = (await tail.stderr.read()).decode()
    assert status == 130 and "Traceback" not in err, err
    [line] = err.splitlines()
    cursor = line.removeprefix("jobwire: stopped; resume with --after ")
    assert cursor != line
    resumed = await jobwire_process("events", "list", "--after", cursor, "--url", server.url, "--json")
    assert resumed.json()["items"] == []  # nothing after the last event printed: none twice, none missed


async def enqueued(api: httpx.AsyncClient, count: int, queue: str) -> list[str]:
    return [(await api.post("/v1/jobs", json={"handler": "mailer", "queue": queue})).json()["id"]
            for _ in range(count)]


async def states(api: httpx.AsyncClient, ids: list[str]) -> list[str | None]:
    found = []
    for execution_id in ids:
        response = await api.get(f"/v1/executions/{execution_id}")
        found.append(response.json()["state"] if response.status_code == 200 else None)
    return found


async def test_bulk_commands_by_filter_repeat_while_more_and_report_totals(
        cli: Callable[..., Awaitable[Done]], api: httpx.AsyncClient, server: RunningServer) -> None:
    url = ("--url", server.url)
    await register(api, "mailer", "http://127.0.0.1:9/mail")
    ids = await enqueued(api, 5, "bulk")
    other = await enqueued(api, 1, "other")
    cancelled = await cli("executions", "bulk-cancel", "--queue", "bulk", "--limit", "2", "--yes", *url, "--json")
    assert cancelled.status == 0, cancelled.err
    assert cancelled.json() == {"matched": 5, "changed": 5, "skipped": 0, "requests": 3, "complete": True}
    assert await states(api, ids + other) == ["CANCELLED"] * 5 + ["ENQUEUED"]
    retried = await cli("executions", "bulk-retry", "--queue", "bulk", "--state", "CANCELLED", "--yes", *url)
    assert retried.out.strip() == "bulk-retry: 5 changed, 0 skipped of 5 matched (1 request)"
    await cli("executions", "bulk-cancel", "--queue", "bulk", "--yes", *url)
    deleted = await cli("executions", "bulk-delete", "--queue", "bulk", "--yes", "--limit", "4", *url, "--json")
    assert deleted.json()["changed"] == 5 and deleted.json()["requests"] == 2
    assert await states(api, ids) == [None] * 5


async def test_bulk_commands_with_dry_run_count_change_nothing_and_ask_nothing(
        cli: Callable[..., Awaitable[Done]], api: httpx.AsyncClient, server: RunningServer) -> None:
    url = ("--url", server.url)
    await register(api, "mailer", "http://127.0.0.1:9/mail")
    ids = await enqueued(api, 3, "dry")
    counted = await cli("executions", "bulk-cancel", "--queue", "dry", "--dry-run", *url)  # no --yes, no terminal
    assert counted.status == 0, counted.err
    assert counted.out.strip() == "bulk-cancel (dry run): would take 3 executions; nothing changed"
    limited = await cli("executions", "bulk-cancel", "--queue", "dry", "--limit", "2", "--dry-run", *url, "--json")
    assert limited.json() == {"matched": 2, "more": True}
    by_ids = await cli("executions", "bulk-cancel", *ids[:2], "--dry-run", *url, "--json")
    assert by_ids.json() == {"matched": 2, "more": False}
    assert await states(api, ids) == ["ENQUEUED"] * 3


async def test_executions_list_takes_the_listing_filters(
        cli: Callable[..., Awaitable[Done]], api: httpx.AsyncClient, server: RunningServer) -> None:
    url = ("--url", server.url)
    await register(api, "mailer", "http://127.0.0.1:9/mail")
    jobs = [{"handler": "mailer", "run_at": "2999-01-01T00:00:00Z", "metadata": {"customer": str(i)},
             "concurrency_key": f"k{i % 2}", "idempotency_key": f"cli-{i}"} for i in range(4)]
    ids = [(await api.post("/v1/jobs", json=job)).json()["id"] for job in jobs]

    async def listed(*args: str) -> list[str]:
        done = await cli("executions", "list", *args, *url, "--json")
        assert done.status == 0, done.err
        return [e["id"] for e in done.json_lines()]

    assert await listed("--metadata", "customer:2") == [ids[2]]
    assert await listed("--concurrency-key", "k1") == [ids[3], ids[1]]
    assert await listed("--idempotency-key", "cli-0") == [ids[0]]
    assert await listed("--created-after", "2000-01-01T00:00:00+01:00", "--created-before",
                        "2999-01-01T00:00:00Z", "--metadata", "customer:1") == [ids[1]]
    assert await listed("--created-before", "2000-01-01T00:00:00Z") == []


async def test_bulk_commands_by_ids_act_on_those_without_asking(
        cli: Callable[..., Awaitable[Done]], api: httpx.AsyncClient, server: RunningServer) -> None:
    await register(api, "mailer", "http://127.0.0.1:9/mail")
    ids = await enqueued(api, 3, "named")
    done = await cli("executions", "bulk-cancel", *ids[:2], "--url", server.url, "--json")
    assert done.status == 0 and done.json()["changed"] == 2
    assert await states(api, ids) == ["CANCELLED", "CANCELLED", "ENQUEUED"]


class Terminal:
    """stdin as a terminal on which the user answers `answer`."""

    def __init__(self, answer: str) -> None:
        self.answer = answer

    def isatty(self) -> bool:
        return True

    def readline(self) -> str:
        return self.answer


async def test_a_bulk_command_by_filter_asks_on_a_terminal_and_refuses_off_one_without_yes(
        cli: Callable[..., Awaitable[Done]], api: httpx.AsyncClient, server: RunningServer,
        monkeypatch: pytest.MonkeyPatch) -> None:
    await register(api, "mailer", "http://127.0.0.1:9/mail")
    ids = await enqueued(api, 2, "asked")
    command = ("executions", "bulk-cancel", "--queue", "asked", "--url", server.url)
    monkeypatch.setattr(sys, "stdin", Terminal("n\n"))
    declined = await cli(*command)
    assert declined.status == 1 and declined.err.endswith("Go on? [y/N] jobwire: not confirmed: nothing was done\n")
    assert await states(api, ids) == ["ENQUEUED", "ENQUEUED"]
    monkeypatch.setattr(sys, "stdin", Terminal("y\n"))
    confirmed = await cli(*command)
    assert confirmed.status == 0 and "2 changed" in confirmed.out
    assert await states(api, ids) == ["CANCELLED", "CANCELLED"]
    scripted = await jobwire_process(*command)  # stdin is no terminal here
    [line] = scripted.err.splitlines()
    assert scripted.status == 2 and line.endswith("add --yes to confirm (stdin is not a terminal to ask on)")


async def test_a_bulk_command_stops_when_a_request_makes_no_progress(cli: Callable[..., Awaitable[Done]]) -> None:
    asked: list[Any] = []

    async def stuck(request: web.Request) -> web.Response:
        asked.append(await request.json())
        return web.json_response({"matched": 3, "changed": 0, "more": True})  # the answer of a server that loops

    app = web.Application()
    app.router.add_post("/v1/executions/bulk-retry", stuck)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    port = free_port()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    try:
        done = await cli("executions", "bulk-retry", "--queue", "q", "--yes", "--url", f"http://127.0.0.1:{port}")
    finally:
        await runner.cleanup()
    assert len(asked) == 1 and done.status == 1
    assert done.err == "jobwire: bulk-retry: stopped: the last request changed nothing though more executions match\n"


async def test_nodes_list(cli: Callable[..., Awaitable[Done]],
                          jobwire: Callable[..., Awaitable[RunningServer]]) -> None:
    running = await jobwire(node_name="listed")
    [node] = (await cli("nodes", "list", "--url", running.url, "--json")).json_lines()
    assert node["server_id"].startswith("listed-") and node["in_flight"] == 0
    assert node["server_id"] in (await cli("nodes", "list", "--url", running.url)).out


async def test_api_keys_create_list_delete(cli: Callable[..., Awaitable[Done]],
                                           jobwire: Callable[..., Awaitable[RunningServer]]) -> None:
    running = await jobwire(api_keys=["bootstrap"])
    admin = ("--url", running.url, "--api-key", "bootstrap")
    created = await cli("api-keys", "create", "reports", "--scope", "read", "--scope", "enqueue", "--queue", "r",
                        *admin, "--json")
    key = created.json()
    assert created.status == 0 and key["key"] and (key["scopes"], key["queues"]) == (["read", "enqueue"], ["r"])
    [listed] = (await cli("api-keys", "list", *admin, "--json")).json_lines()
    assert listed["id"] == key["id"] and "key" not in listed
    shown = await cli("api-keys", "create", "ops", "--scope", "operate", *admin)
    assert shown.status == 0 and "the key is shown this once" in shown.err
    reader = await cli("queues", "list", "--url", running.url, "--api-key", key["key"], "--json")
    assert reader.status == 0
    deleted = await cli("api-keys", "delete", key["id"], *admin)
    assert deleted.status == 0 and deleted.out.strip() == f"deleted API key {key['id']}"
    assert [k["name"] for k in (await cli("api-keys", "list", *admin, "--json")).json_lines()] == ["ops"]


async def test_handler_secrets_are_added_and_deleted(cli: Callable[..., Awaitable[Done]], api: httpx.AsyncClient,
                                                     server: RunningServer) -> None:
    url = ("--url", server.url)
    await register(api, "mailer", "http://127.0.0.1:9/mail")
    added = await cli("handlers", "add-secret", "mailer", "--expire-others-after", "60", *url, "--json")
    secret = added.json()
    assert added.status == 0 and secret["secret"].startswith("whsec_")
    spare = await cli("handlers", "add-secret", "mailer", *url)
    assert spare.status == 0 and "the signing secret is shown this once" in spare.err and "whsec_" in spare.out
    deleted = await cli("handlers", "delete-secret", "mailer", secret["id"], *url)
    assert deleted.status == 0 and deleted.out.strip() == f"deleted secret {secret['id']} of handler mailer"


async def test_a_file_enqueued_again_after_a_fix_creates_only_what_is_new(
        cli: Callable[..., Awaitable[Done]], api: httpx.AsyncClient, server: RunningServer, tmp_path: Path) -> None:
    await register(api, "mailer", "http://127.0.0.1:9/mail")
    jobs = tmp_path / "jobs.jsonl"
    lines = ['{"payload": {"to": "a"}}',
             '{"payload": {"to": "a"}}',  # identical: a second job
             '{"payload": {"to": "b"}, "priority": "high"}',  # refused: priority is an integer
             '{"payload": {"to": "c"}, "idempotency_key": "own-key"}']
    jobs.write_text("\n".join(lines) + "\n")
    first = await cli("jobs", "enqueue", "mailer", "--from", str(jobs), "--url", server.url, "--json")
    assert first.status == 1 and first.json() == {"created": 3, "existing": 0, "failed": 1, "complete": True}

    lines[2] = '{"priority": 3, "payload": {"to": "b"}}'  # mended (its keys in another order, too)
    jobs.write_text("\n".join(lines) + "\n")
    again = await cli("jobs", "enqueue", "mailer", "--from", str(jobs), "--url", server.url, "--json")
    assert again.status == 0 and again.json() == {"created": 1, "existing": 3, "failed": 0, "complete": True}
    listed = (await api.get("/v1/executions")).json()["items"]
    assert sorted(e["payload"]["to"] for e in listed) == ["a", "a", "b", "c"]
    own = await api.post("/v1/jobs", json={"handler": "mailer", "payload": {"to": "c"}, "idempotency_key": "own-key"})
    assert own.status_code == 200  # the line's own key was the one used

    # Another handler for the same file: other jobs, not a clash of keys.
    await register(api, "sms", "http://127.0.0.1:9/sms")
    lines[3] = '{"payload": {"to": "c"}}'
    jobs.write_text("\n".join(lines) + "\n")
    other = await cli("jobs", "enqueue", "sms", "--from", str(jobs), "--url", server.url, "--json")
    assert other.json() == {"created": 4, "existing": 0, "failed": 0, "complete": True}


async def test_subscriptions_put_show_list_deliveries_resend_recover_delete(
        cli: Callable[..., Awaitable[Done]], api: httpx.AsyncClient, server: RunningServer, db: Any) -> None:
    from app.services.event_delivery import EventDeliveryService  # writes the deliveries a node's loop would

    url = ("--url", server.url)
    await register(api, "mailer", "http://127.0.0.1:9/mail")
    created = await cli("subscriptions", "put", "audit", "http://127.0.0.1:9/events", "--type", "execution.cancelled",
                        "--queue", "a", "--queue", "b", *url)
    assert created.status == 0 and "the signing secret is shown this once" in created.err and "whsec_" in created.out
    shown = (await cli("subscriptions", "show", "audit", *url, "--json")).json()
    assert (shown["types"], shown["queues"], shown["handlers"], shown["state"]) == (
        ["execution.cancelled"], ["a", "b"], None, "enabled") and "secret" not in shown
    table = await cli("subscriptions", "list", *url)
    assert table.out.splitlines()[0].split() == ["name", "url", "state", "types", "backlog", "failing_since",
                                                 "last_error"]
    assert "audit" in table.out and "http://127.0.0.1:9/events" in table.out

    ids = [await cancelled(api, queue=q) for q in ("a", "b", "c")]
    assert (await EventDeliveryService(db).pump()).written == 2  # queue c is not the subscription's
    listed = (await cli("subscriptions", "deliveries", "audit", *url, "--json")).json_lines()
    assert [d["execution_id"] for d in listed] == ids[1::-1]  # newest first
    assert {(d["status"], d["event"]["type"]) for d in listed} == {("pending", "execution.cancelled")}
    assert len((await cli("subscriptions", "deliveries", "audit", "--limit", "1", *url, "--json")).json_lines()) == 1
    assert (await cli("subscriptions", "deliveries", "audit", "--status", "dead", *url, "--json")).out == ""
    rows = await cli("subscriptions", "deliveries", "audit", *url)
    assert rows.out.splitlines()[0].split() == ["id", "status", "tries", "type", "execution_id", "last_status",
                                                "next_try_at", "last_error"]
    resent = await cli("subscriptions", "resend", "audit", str(listed[0]["id"]), *url, "--json")
    assert resent.status == 0 and resent.json()["id"] == listed[0]["id"]
    recovered = await cli("subscriptions", "recover", "audit", "--since", "2026-01-01T00:00:00Z", *url)
    assert (recovered.status, recovered.out.strip()) == (0, "recovered 2 events of subscription audit")
    window = await cli("subscriptions", "recover", "audit", "--since", "2026-01-02T00:00:00Z", "--until",
                       "2026-01-01T00:00:00Z", *url)
    assert window.status == 1 and window.err.startswith("jobwire: 422 ") and "until" in window.err
    with pytest.raises(SystemExit) as bad_type:
        await cli("subscriptions", "put", "audit", "http://127.0.0.1:9/events", "--type", "execution.x", *url)
    assert bad_type.value.code == 2

    added = (await cli("subscriptions", "add-secret", "audit", *url, "--json")).json()
    assert added["secret"].startswith("whsec_")
    retired = await cli("subscriptions", "delete-secret", "audit", added["id"], *url)
    assert retired.out.strip() == f"deleted secret {added['id']} of subscription audit"
    deleted = await cli("subscriptions", "delete", "audit", *url)
    assert deleted.status == 0 and deleted.out.strip() == "deleted subscription audit"
    gone = await cli("subscriptions", "show", "audit", *url)
    assert gone.status == 1 and gone.err.startswith("jobwire: 404 ")


async def test_workflows_list_show_jobs_cancel_retry(cli: Callable[..., Awaitable[Done]],
                                                     jobwire: Callable[..., Awaitable[RunningServer]],
                                                     handler: HandlerServer) -> None:
    fixed = {"yet": False}

    async def flaky(_: web.Request, job: dict[str, Any]) -> web.StreamResponse:
        if fixed["yet"]:
            return web.json_response({"result": "done"})
        return web.json_response({"error": {"type": "boom", "message": "no"}, "retryable": False}, status=500)

    running = await jobwire()
    async with httpx.AsyncClient(base_url=running.url, timeout=30) as api:
        await register(api, "flaky", handler.route("/flaky", flaky))
        failing = (await api.post("/v1/workflows", json={"name": "nightly", "jobs": [
            {"ref": "fetch", "handler": "flaky", "max_attempts": 1},
            {"ref": "report", "handler": "flaky", "depends_on": ["fetch"]}]})).json()
        held = (await api.post("/v1/workflows", json={"name": "weekly", "jobs": [
            {"ref": "a", "handler": "flaky", "run_at": "2999-01-01T00:00:00Z"},
            {"ref": "b", "handler": "flaky", "depends_on": ["a"]}]})).json()
        for _ in range(300):
            if (await api.get(f"/v1/workflows/{failing['id']}")).json()["state"] == "FAILED":
                break
            await asyncio.sleep(0.05)
    url = ("--url", running.url)

    listed = (await cli("workflows", "list", *url, "--json")).json_lines()
    assert [(w["id"], w["name"], w["state"]) for w in listed] == [(held["id"], "weekly", "RUNNING"),
                                                                  (failing["id"], "nightly", "FAILED")]
    assert [w["id"] for w in (await cli("workflows", "list", "--name", "nightly", *url, "--json")).json_lines()] == [
        failing["id"]]
    assert [w["id"] for w in (await cli("workflows", "list", "--state", "RUNNING", *url, "--json")).json_lines()] == [
        held["id"]]
    assert [w["id"] for w in (await cli("workflows", "list", "--limit", "1", *url, "--json")).json_lines()] == [
        held["id"]]
    table = await cli("workflows", "list", *url)
    assert table.out.splitlines()[0].split() == ["id", "name", "state", "jobs", "counts", "created_at",
                                                 "completed_at"]
    assert failing["id"] in table.out and '"DEAD_LETTER":1' in table.out  # the counts as JSON

    shown = (await cli("workflows", "show", failing["id"], *url, "--json")).json()
    assert (shown["state"], shown["counts"], shown["jobs"]) == ("FAILED", {"DEAD_LETTER": 1, "CANCELLED": 1}, 2)
    record = await cli("workflows", "show", held["id"], *url)
    assert record.status == 0 and "RUNNING" in record.out and "weekly" in record.out

    jobs = (await cli("workflows", "jobs", held["id"], *url, "--json")).json_lines()
    assert [(j["ref"], j["state"], j["depends_on"]) for j in jobs] == [("a", "ENQUEUED", []), ("b", "WAITING", ["a"])]
    waiting = (await cli("workflows", "jobs", held["id"], "--state", "WAITING", *url, "--json")).json_lines()
    assert [j["ref"] for j in waiting] == ["b"]
    rows = await cli("workflows", "jobs", held["id"], *url)
    assert rows.out.splitlines()[0].split() == ["ref", "execution_id", "state", "queue", "depends_on"]
    blockers = (await cli("executions", "blockers", jobs[1]["execution_id"], *url, "--json")).json()
    assert blockers["state"] == "WAITING" and {"reason": "dependencies", "refs": ["a"]} in blockers["items"]
    assert [e["id"] for e in (await cli("executions", "list", "--state", "WAITING", *url, "--json")).json_lines()] == [
        jobs[1]["execution_id"]]

    cancelled = await cli("workflows", "cancel", held["id"], *url)
    assert cancelled.status == 0 and "CANCELLED" in cancelled.out
    again = await cli("workflows", "cancel", held["id"], *url)
    assert again.status == 1 and again.err.startswith("jobwire: 409 ") and len(again.err.splitlines()) == 1

    fixed["yet"] = True
    retried = (await cli("workflows", "retry", failing["id"], *url, "--json")).json()
    assert (retried["state"], retried["retried"], retried["waiting_again"]) == ("RUNNING", 1, 1)
    nothing = await cli("workflows", "retry", failing["id"], *url)
    assert nothing.status == 1 and nothing.err.startswith("jobwire: 409 ")
    missing = await cli("workflows", "show", "00000000-0000-0000-0000-000000000000", *url)
    assert missing.status == 1 and missing.err.startswith("jobwire: 404 ")
