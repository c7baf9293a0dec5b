"""Settings: every DESIGN §7 variable with its default, list parsing, schema validation, public URL."""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from app.config import Settings

# DESIGN §7: environment variable → (field, default).
DEFAULTS: dict[str, tuple[str, Any]] = {
    "JOBWIRE_DATABASE_URL": ("database_url", None),
    "JOBWIRE_DATA_DIR": ("data_dir", Path("./.jobwire")),
    "JOBWIRE_DB_SCHEMA": ("db_schema", None),
    "JOBWIRE_MIGRATE_ON_START": ("migrate_on_start", True),
    "JOBWIRE_HOST": ("host", "127.0.0.1"),
    "JOBWIRE_PORT": ("port", 8000),
    "JOBWIRE_PUBLIC_URL": ("public_url", None),
    "JOBWIRE_API_KEYS": ("api_keys", []),
    "JOBWIRE_NODE_NAME": ("node_name", socket.gethostname()),
    "JOBWIRE_QUEUES": ("queues", []),
    "JOBWIRE_CONCURRENCY": ("concurrency", 512),
    "JOBWIRE_POLL_INTERVAL": ("poll_interval", 1.0),
    "JOBWIRE_EXECUTION_TIMEOUT": ("execution_timeout", 120.0),
    "JOBWIRE_RETRY_BASE_DELAY": ("retry_base_delay", 1.0),
    "JOBWIRE_RETRY_MAX_DELAY": ("retry_max_delay", 3600.0),
    "JOBWIRE_HEARTBEAT_INTERVAL": ("heartbeat_interval", 10.0),
    "JOBWIRE_HEARTBEAT_TIMEOUT": ("heartbeat_timeout", 60.0),
    "JOBWIRE_SCAN_INTERVAL": ("scan_interval", 30.0),
    "JOBWIRE_MISFIRE_THRESHOLD": ("misfire_threshold", 60.0),
    "JOBWIRE_SHUTDOWN_GRACE": ("shutdown_grace", 30.0),
    "JOBWIRE_MAX_PAYLOAD_BYTES": ("max_payload_bytes", 1_048_576),
    "JOBWIRE_MAX_REQUEST_BYTES": ("max_request_bytes", 16_777_216),
}

# A value set through the environment → what the field then holds.
FROM_ENV: dict[str, tuple[str, Any]] = {
    "JOBWIRE_DATABASE_URL": ("postgresql://u:p@db:5432/jobs", "postgresql://u:p@db:5432/jobs"),
    "JOBWIRE_DATA_DIR": ("/var/lib/jobwire", Path("/var/lib/jobwire")),
    "JOBWIRE_DB_SCHEMA": ("jw_schema", "jw_schema"),
    "JOBWIRE_MIGRATE_ON_START": ("false", False),
    "JOBWIRE_HOST": ("10.1.2.3", "10.1.2.3"),
    "JOBWIRE_PORT": ("9000", 9000),
    "JOBWIRE_PUBLIC_URL": ("https://jobs.example.com", "https://jobs.example.com"),
    "JOBWIRE_API_KEYS": ("k1", ["k1"]),
    "JOBWIRE_NODE_NAME": ("node-a", "node-a"),
    "JOBWIRE_QUEUES": ("emails", ["emails"]),
    "JOBWIRE_CONCURRENCY": ("8", 8),
    "JOBWIRE_POLL_INTERVAL": ("0.25", 0.25),
    "JOBWIRE_EXECUTION_TIMEOUT": ("30", 30.0),
    "JOBWIRE_RETRY_BASE_DELAY": ("0.5", 0.5),
    "JOBWIRE_RETRY_MAX_DELAY": ("60", 60.0),
    "JOBWIRE_HEARTBEAT_INTERVAL": ("2", 2.0),
    "JOBWIRE_HEARTBEAT_TIMEOUT": ("12", 12.0),
    "JOBWIRE_SCAN_INTERVAL": ("5", 5.0),
    "JOBWIRE_MISFIRE_THRESHOLD": ("15", 15.0),
    "JOBWIRE_SHUTDOWN_GRACE": ("3.5", 3.5),
    "JOBWIRE_MAX_PAYLOAD_BYTES": ("2048", 2048),
    "JOBWIRE_MAX_REQUEST_BYTES": ("4096", 4096),
}


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for name in list(os.environ):
        if name.startswith("JOBWIRE_"):
            monkeypatch.delenv(name)
    yield


def test_design_table_and_env_samples_cover_the_same_settings() -> None:
    assert set(DEFAULTS) == set(FROM_ENV)


@pytest.mark.parametrize("env", sorted(DEFAULTS))
def test_every_design_setting_exists_with_its_default(env: str) -> None:
    field, default = DEFAULTS[env]
    assert field in Settings.model_fields, f"{env} has no setting"
    assert getattr(Settings(), field) == default


@pytest.mark.parametrize("env", sorted(FROM_ENV))
def test_every_design_setting_is_read_from_its_jobwire_variable(env: str, monkeypatch: pytest.MonkeyPatch) -> None:
    raw, expected = FROM_ENV[env]
    monkeypatch.setenv(env, raw)
    assert getattr(Settings(), DEFAULTS[env][0]) == expected


def test_comma_separated_api_keys_and_queues_parse_to_lists(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JOBWIRE_API_KEYS", "alpha, beta,,gamma ")
    monkeypatch.setenv("JOBWIRE_QUEUES", "emails,reports")
    settings = Settings()
    assert settings.api_keys == ["alpha", "beta", "gamma"]
    assert settings.queues == ["emails", "reports"]


def test_empty_api_keys_and_queues_mean_open_and_all(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JOBWIRE_API_KEYS", "")
    monkeypatch.setenv("JOBWIRE_QUEUES", "")
    settings = Settings()
    assert settings.api_keys == []
    assert settings.queues == []


@pytest.mark.parametrize("name", ["bad-name", "1starts_with_digit", 'quo"te', "has space", "a" * 64, "semi;colon"])
def test_invalid_db_schema_raises_a_clear_error(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JOBWIRE_DB_SCHEMA", name)
    with pytest.raises(ValidationError) as info:
        Settings()
    message = str(info.value)
    assert "JOBWIRE_DB_SCHEMA" in message
    assert "not a valid PostgreSQL identifier" in message


@pytest.mark.parametrize("name", ["jw_schema", "_private", "JwMixed", "a" * 63])
def test_valid_db_schema_is_kept(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JOBWIRE_DB_SCHEMA", name)
    assert Settings().db_schema == name


def test_empty_db_schema_means_the_default_schema(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JOBWIRE_DB_SCHEMA", "")
    assert Settings().db_schema is None


@pytest.mark.parametrize("host", ["0.0.0.0", "::"])
def test_wildcard_host_gives_a_loopback_public_url(host: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JOBWIRE_HOST", host)
    monkeypatch.setenv("JOBWIRE_PORT", "9123")
    assert Settings().effective_public_url == "http://127.0.0.1:9123"


def test_default_public_url_is_host_and_port() -> None:
    assert Settings().effective_public_url == "http://127.0.0.1:8000"
    assert Settings(host="10.0.0.5", port=81).effective_public_url == "http://10.0.0.5:81"


def test_explicit_public_url_wins_without_its_trailing_slash(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JOBWIRE_HOST", "0.0.0.0")
    monkeypatch.setenv("JOBWIRE_PUBLIC_URL", "https://jobs.example.com/")
    assert Settings().effective_public_url == "https://jobs.example.com"


def test_a_database_url_with_sslmode_reaches_asyncpg_as_its_ssl_argument_in_migrations() -> None:
    """SQLAlchemy's asyncpg dialect passes the query to asyncpg.connect(), which has no `sslmode`
    (a TypeError at every migration); the pool's own DSN keeps libpq's spelling, which asyncpg parses."""
    from app.db.connection import asyncpg_dsn, sqlalchemy_url

    url = "postgresql://jobwire:pw@db.example:5432/jobs?sslmode=require"
    assert dict(sqlalchemy_url(url).query) == {"ssl": "require"}
    assert asyncpg_dsn(url).endswith("?sslmode=require")
