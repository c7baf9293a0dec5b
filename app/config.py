"""Settings from the environment (`JOBWIRE_*`), read once by the composition root.

Durations are seconds (float); sizes are bytes. List-valued settings are comma-separated
strings (pydantic-settings would otherwise parse list values as JSON).
"""

from __future__ import annotations

import base64
import binascii
import difflib
import re
import socket
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Literal

from pydantic import Field, SecretStr, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

_SCHEMA_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,62}$")
_URL_SCHEMES = ("postgresql", "postgres", "postgresql+asyncpg")
_URL_FORM = "postgresql://user:password@host:5432/database"
_WILDCARD_HOSTS = {"0.0.0.0", "::", ""}


def _split_csv(value: object) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [part.strip() for part in value.split(",") if part.strip()]
    return [str(part).strip() for part in value if str(part).strip()]  # type: ignore[union-attr]


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="JOBWIRE_", extra="ignore")

    database_url: str | None = Field(None, description="postgresql://…; unset → embedded PostgreSQL")
    data_dir: Path = Field(Path("./.jobwire"), description="embedded PostgreSQL lives in <dir>/pg")
    db_schema: str | None = Field(None, description="schema of every job table and of alembic's history")
    db_pool_size: int = Field(16, ge=2, le=1000, description="database connections this node keeps open (all of "
                              "them, always: a pool that opens and closes connections under load spends its CPU "
                              "on connection set-up)")
    migrate_on_start: bool = Field(True, description="run `alembic upgrade head` at start-up")
    host: str = Field("127.0.0.1", description="listen address")
    port: int = Field(8000, ge=1, le=65535, description="listen port")
    public_url: str | None = Field(None, description="base URL handlers call back; default http://<host>:<port> "
                                   "(a wildcard host, 0.0.0.0 or ::, as 127.0.0.1)")
    api_keys: Annotated[list[str], NoDecode] = Field(
        default_factory=list, description="bootstrap Bearer keys for management routes, beside the keys stored by "
        "POST /v1/api-keys; with neither, the API is open")
    node_name: str = Field(default_factory=socket.gethostname, description="first part of the node id")
    queues: Annotated[list[str], NoDecode] = Field(
        default_factory=list, description="queues this node claims from; empty → all")
    concurrency: int = Field(512, ge=1, le=10_000,
                             description="jobs in flight per node (a batch call holds one per job)")
    dispatch_client: Literal["http11", "aiohttp"] = Field(
        "http11", description="HTTP client of handler calls: the built-in HTTP/1.1 client, or aiohttp")
    handler_networks: str = Field(
        "any", description="where handlers may be called, comma-separated: any, private, public, loopback and "
        "CIDRs (app/domain/address_policy.py); link-local, unspecified, multicast, broadcast, cloud metadata, Teredo "
        "and local-use NAT64 addresses only when a CIDR names them; an IPv6 spelling of an IPv4 address is judged as "
        "that address. Checked on the address connected to, at every new connection")
    poll_interval: float = Field(1.0, gt=0, description="seconds between fallback claim polls")
    execution_timeout: float = Field(120.0, gt=0, le=7 * 86400, description="default attempt deadline, seconds")
    retry_base_delay: float = Field(1.0, ge=0, description="first retry delay, seconds")
    retry_max_delay: float = Field(3600.0, ge=0, description="cap on any retry delay, seconds")
    heartbeat_interval: float = Field(10.0, gt=0, description="seconds between node heartbeats")
    heartbeat_timeout: float = Field(60.0, gt=0, description="a node silent this long is dead")
    scan_interval: float = Field(30.0, gt=0, description="seconds between dead-node and deadline scans")
    retention_succeeded: float = Field(604_800.0, ge=0, description="seconds a SUCCEEDED execution is kept after "
                                       "completed_at (with its logs, steps and events); 0 keeps forever")
    retention_failed: float = Field(2_592_000.0, ge=0, description="seconds a CANCELLED or DEAD_LETTER execution, "
                                    "or an ABANDONED cron fire, is kept after completed_at; 0 keeps forever")
    prune_interval: float = Field(60.0, gt=0, description="seconds between the pruner's runs (on every node)")
    misfire_threshold: float = Field(60.0, ge=0, description="cron lateness before a fire counts as missed")
    scheduler_interval: float = Field(1.0, gt=0, le=60, description="seconds between cron scheduler ticks")
    shutdown_grace: float = Field(30.0, ge=0, description="drain time on SIGTERM, seconds")
    max_payload_bytes: int = Field(1_048_576, ge=1, description="one job's payload + parameters + metadata")
    max_request_bytes: int = Field(16_777_216, ge=1, description="any request body")
    event_concurrency: int = Field(16, ge=1, le=1000, description="event deliveries in flight per node")
    event_retry_seconds: float = Field(86_400.0, gt=0, le=30 * 86400, description="seconds an event delivery "
                                       "is retried (1 s, doubling to 10 minutes) before it is dead")
    event_disable_after: float = Field(432_000.0, gt=0, description="seconds a subscription may fail without a "
                                       "success before it is disabled (a PUT enables it again)")
    log_format: Literal["text", "json"] = Field(
        "text", description="log lines: text (the message, then key=value fields) or json (one object per line)")
    otel: bool = Field(
        False, description="OpenTelemetry traces and metrics (the `otel` extra: pip install 'jobwire[otel]'): a span "
        "per enqueue, dispatch and completion callback, and histograms of queue wait and call duration, on the "
        "global providers the application's OpenTelemetry SDK set-up (or opentelemetry-instrument) sets. Off, none "
        "of it is imported or run")
    secret_key: SecretStr | None = Field(
        None, description="Fernet key (32 bytes, URL-safe base64) that encrypts every secret at rest: handlers' "
        "signing secrets and the callback-token server key; a start-up with it encrypts what is still plain. "
        "Comma-separated keys, newest first, rotate it: the first encrypts, any reads, and a start-up re-encrypts "
        "what an older one encrypted. Unset → secrets are stored in plain text")

    @field_validator("api_keys", "queues", mode="before")
    @classmethod
    def _csv(cls, value: object) -> list[str]:
        return _split_csv(value)

    @field_validator("db_schema", mode="before")
    @classmethod
    def _schema(cls, value: object) -> str | None:
        if value is None or value == "":
            return None
        if not isinstance(value, str) or not _SCHEMA_NAME.match(value):
            raise ValueError(
                f"JOBWIRE_DB_SCHEMA={value!r} is not a valid PostgreSQL identifier "
                "(letters, digits and _, not starting with a digit, at most 63 characters)"
            )
        return value

    @field_validator("database_url", "public_url", mode="before")
    @classmethod
    def _blank_is_unset(cls, value: object) -> object:
        return None if value == "" else value

    @field_validator("database_url")
    @classmethod
    def _postgresql_url(cls, value: str | None) -> str | None:
        # Checked here, before anything starts; the message never repeats the URL (it may hold a password).
        if value is None:
            return None
        scheme, found, _ = value.partition("://")
        if not found:
            raise ValueError(f"not a URL: use {_URL_FORM}")
        if scheme.lower() not in _URL_SCHEMES:
            raise ValueError(f"unsupported scheme {scheme!r}: use {_URL_FORM}")
        return value

    @field_validator("secret_key", mode="before")
    @classmethod
    def _fernet_key(cls, value: object) -> object:
        # Checked at start-up, in Fernet's own terms; the message never repeats the key.
        if value is None or value == "":
            return None
        text = value.get_secret_value() if isinstance(value, SecretStr) else value
        keys = [part.strip() for part in text.split(",")] if isinstance(text, str) else []
        if not keys or not all(_is_fernet_key(key) for key in keys):
            raise ValueError(f"not a Fernet key (nor comma-separated Fernet keys, newest first): {_FERNET_KEY_FORM}")
        return ",".join(keys)

    @field_validator("log_format", mode="before")
    @classmethod
    def _lowercase(cls, value: object) -> object:
        return value.strip().lower() if isinstance(value, str) else value

    @property
    def effective_public_url(self) -> str:
        if self.public_url:
            return self.public_url.rstrip("/")
        host = "127.0.0.1" if self.host in _WILDCARD_HOSTS else self.host
        if ":" in host and not host.startswith("["):
            host = f"[{host}]"
        return f"http://{host}:{self.port}"


_FERNET_KEY_FORM = ("use 32 random bytes in URL-safe base64, 44 characters, as "
                    "`python -c 'from cryptography.fernet import Fernet; print(Fernet.generate_key().decode())'` "
                    "prints")


def _is_fernet_key(text: str) -> bool:
    try:
        raw = base64.b64decode(text.replace("-", "+").replace("_", "/"), validate=True)
    except (binascii.Error, ValueError):
        return False
    return len(raw) == 32 and "+" not in text and "/" not in text


PREFIX = "JOBWIRE_"
# JOBWIRE_* variables that are no setting of this server and not mistaken for one: the client's
# key (see client_key_refusal) and the example handlers' signing secret. JOBWIRE_TEST_* are the
# test suite's.
NOT_SETTINGS = frozenset({"JOBWIRE_API_KEY", "JOBWIRE_HANDLER_SECRET"})


def setting_variables() -> list[str]:
    """The environment variable of every setting."""
    return [PREFIX + name.upper() for name in Settings.model_fields]


def unknown_variables(environ: Mapping[str, str]) -> list[tuple[str, str | None]]:
    """JOBWIRE_* variables that name no setting (pydantic-settings ignores them), each with the
    closest setting's variable, or None when none is close."""
    known = setting_variables()
    suffixes = [name.removeprefix(PREFIX) for name in known]
    found = []
    for name in sorted(environ):
        upper = name.upper()  # settings are read whatever the case of their variable
        if not upper.startswith(PREFIX) or upper in known or upper in NOT_SETTINGS:
            continue
        if upper.startswith("JOBWIRE_TEST_"):
            continue
        # Compared without the prefix every name shares, which would make anything look close.
        close = difflib.get_close_matches(upper.removeprefix(PREFIX), suffixes, n=1, cutoff=0.6)
        found.append((name, PREFIX + close[0] if close else None))
    return found


def client_key_refusal(environ: Mapping[str, str], settings: Settings, *, database_keys: bool) -> str | None:
    """Why a server must not start (said of JOBWIRE_API_KEY), if JOBWIRE_API_KEY (the key a client
    sends) is set while the server takes no key at all — no JOBWIRE_API_KEYS and, `database_keys`
    false, no key stored in its database: whoever set it meant the server to take keys, and it
    would be open. A server closed by either kind of key starts: the variable is a client's."""
    given = any(name.upper() == "JOBWIRE_API_KEY" and value for name, value in environ.items())
    if given and not settings.api_keys and not database_keys:
        return ("set, but it is the client's variable (the key a client sends) and protects nothing here: this "
                "server has no API key (JOBWIRE_API_KEYS is unset and its database holds none), so it would serve "
                "every management route without one. Set JOBWIRE_API_KEYS (comma-separated) to require keys, or "
                "unset JOBWIRE_API_KEY to serve without them")
    return None
