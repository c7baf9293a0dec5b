"""What `jobwire serve` checks before it starts: unknown JOBWIRE_* variables (a warning naming the
closest setting), JOBWIRE_API_KEY on an open server (refused), the database URL's scheme, how
an address that cannot be had is worded, and the open-files limit it raises.
(tests/cluster/test_startup_failures.py runs them.)"""

from __future__ import annotations

import errno
import socket
import sys

import pytest
from pydantic import ValidationError

from app.config import Settings, client_key_refusal, setting_variables, unknown_variables
from app.startup import bind, database_address, database_failure, listen_failure, open_files_limit


def test_every_setting_has_its_variable() -> None:
    names = setting_variables()
    assert {"JOBWIRE_DATABASE_URL", "JOBWIRE_API_KEYS", "JOBWIRE_LOG_FORMAT", "JOBWIRE_PORT"} <= set(names)


@pytest.mark.parametrize(("name", "closest"), [
    ("JOBWIRE_POLL_INTERVALL", "JOBWIRE_POLL_INTERVAL"),
    ("JOBWIRE_DATABASE", "JOBWIRE_DATABASE_URL"),
    ("JOBWIRE_LOGFORMAT", "JOBWIRE_LOG_FORMAT"),
    ("JOBWIRE_APIKEYS", "JOBWIRE_API_KEYS"),
    ("jobwire_concurency", "JOBWIRE_CONCURRENCY"),
    ("JOBWIRE_ZZZ", None),
])
def test_an_unknown_variable_is_named_with_the_closest_setting(name: str, closest: str | None) -> None:
    assert unknown_variables({name: "1", "JOBWIRE_PORT": "8000", "PATH": "/bin"}) == [(name, closest)]


def test_settings_client_variables_and_the_test_suites_are_not_unknown() -> None:
    environ = {name: "1" for name in setting_variables()}
    environ.update(JOBWIRE_API_KEY="k", JOBWIRE_HANDLER_SECRET="whsec_x", JOBWIRE_TEST_DATABASE_URL="postgresql://",
                   jobwire_port="1", OTHER="x")
    assert unknown_variables(environ) == []


def test_the_clients_api_key_is_refused_only_by_a_server_that_takes_no_key() -> None:
    client_key = {"JOBWIRE_API_KEY": "secret"}
    open_server = Settings(api_keys=[])
    refusal = client_key_refusal(client_key, open_server, database_keys=False)
    assert refusal and "client's variable" in refusal and "JOBWIRE_API_KEYS" in refusal
    assert "its database holds none" in refusal  # true of this server: no bootstrap key, no stored key
    # Closed by keys stored in its database (POST /v1/api-keys), or by bootstrap keys: it starts.
    assert client_key_refusal(client_key, open_server, database_keys=True) is None
    assert client_key_refusal(client_key, Settings(api_keys=["secret"]), database_keys=False) is None
    assert client_key_refusal({"JOBWIRE_API_KEY": ""}, open_server, database_keys=False) is None
    assert client_key_refusal({}, open_server, database_keys=False) is None


@pytest.mark.parametrize(("url", "message"), [
    ("mysql://u:hunter2@db/jobs", "unsupported scheme 'mysql'"),
    ("sqlite:///jobs.db", "unsupported scheme 'sqlite'"),
    ("db.example.com:5432/jobs", "not a URL"),
])
def test_a_database_url_that_is_not_postgresql_is_refused_without_repeating_it(url: str, message: str) -> None:
    with pytest.raises(ValidationError) as info:
        Settings(database_url=url)
    [error] = info.value.errors()
    assert error["loc"] == ("database_url",) and message in error["msg"]
    assert "hunter2" not in error["msg"]


@pytest.mark.parametrize("url", ["postgresql://u@h/db", "postgres://u@h/db", "postgresql+asyncpg://u@h/db",
                                 "POSTGRESQL://u@h/db"])
def test_postgresql_urls_are_taken(url: str) -> None:
    assert Settings(database_url=url).database_url == url


@pytest.mark.parametrize(("url", "where"), [
    ("postgresql://u:secret@db.internal:6543/jobs", "db.internal:6543"),
    ("postgresql://u@db.internal/jobs", "db.internal:5432"),
    ("postgresql://u@[::1]:5433/jobs", "[::1]:5433"),
    ("postgresql://postgres@/postgres?host=/tmp/pg", "/tmp/pg (unix socket, port 5432)"),
    ("postgresql://u:secret@h1:5432,h2:5432/jobs", "h1:5432,h2:5432"),
])
def test_the_database_address_is_said_without_credentials(url: str, where: str) -> None:
    assert database_address(url) == where


@pytest.mark.parametrize(("code", "setting", "words"), [
    (errno.EADDRINUSE, "JOBWIRE_PORT", "already in use"),
    (errno.EACCES, "JOBWIRE_PORT", "permission denied"),
    (errno.EADDRNOTAVAIL, "JOBWIRE_HOST", "no interface"),
])
def test_an_address_that_cannot_be_had_names_its_setting(code: int, setting: str, words: str) -> None:
    failure = listen_failure(OSError(code, "whatever"), "127.0.0.1", 8000)
    assert failure.setting == setting and words in failure.cause and "127.0.0.1:8000" in failure.cause


def test_binding_a_port_that_another_socket_listens_on_names_jobwire_port() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(Exception) as info:
            bind("127.0.0.1", port)
    assert str(info.value) == (f"JOBWIRE_PORT: cannot listen on 127.0.0.1:{port}: the address is already in use "
                               "(another process listens on this port)")


class ServerError(Exception):
    """Stands for the driver's error: what the classification reads is its SQLSTATE."""

    def __init__(self, message: str, sqlstate: str) -> None:
        super().__init__(message)
        self.sqlstate = sqlstate


class Wrapped(Exception):
    """Stands for SQLAlchemy's DBAPIError, which holds the driver's error as `.orig`."""

    def __init__(self, orig: BaseException) -> None:
        super().__init__(f"({type(orig).__name__}) {orig}")
        self.orig = orig


URL = "postgresql://jobwire:secret@db.internal:5432/jobs"


@pytest.mark.parametrize(("exc", "cause"), [
    (ServerError('database "jobs" does not exist', "3D000"),
     'database "jobs" does not exist (PostgreSQL at db.internal:5432, SQLSTATE 3D000)'),
    (Wrapped(ServerError('password authentication failed for user "jobwire"', "28P01")),
     'password authentication failed for user "jobwire" (PostgreSQL at db.internal:5432, SQLSTATE 28P01)'),
    (ConnectionRefusedError(errno.ECONNREFUSED, "Connect call failed"),
     "could not connect to db.internal:5432 (connection refused)"),
    (socket.gaierror(-2, "Name or service not known"),
     "could not connect to db.internal:5432 (host not found: Name or service not known)"),
    (TimeoutError(), "could not connect to db.internal:5432 (timed out)"),
])
def test_what_reaching_the_database_ran_into_is_said_in_one_line(exc: BaseException, cause: str) -> None:
    try:
        try:
            raise exc
        except BaseException as inner:
            raise RuntimeError("the service's own wrapper") from inner
    except RuntimeError as outer:
        failure = database_failure(outer, URL)
    assert failure is not None and failure.setting == "JOBWIRE_DATABASE_URL" and failure.cause == cause
    assert "secret" not in failure.cause


@pytest.mark.parametrize("exc", [ServerError('syntax error at or near "SELEC"', "42601"), KeyError("bug")])
def test_an_error_that_is_a_bug_is_not_explained_away(exc: BaseException) -> None:
    assert database_failure(exc, URL) is None


@pytest.mark.skipif(sys.platform == "win32", reason="no open-files limit to raise")
def test_the_open_files_limit_is_raised_to_the_hard_limit_and_never_lowered() -> None:
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    try:
        lowered = min(256, soft) if soft != resource.RLIM_INFINITY else 256
        resource.setrlimit(resource.RLIMIT_NOFILE, (lowered, hard))
        assert open_files_limit(100) == (hard, hard)
        assert resource.getrlimit(resource.RLIMIT_NOFILE) == (hard, hard)
        assert open_files_limit(10) == (hard, hard)  # already there: unchanged
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
