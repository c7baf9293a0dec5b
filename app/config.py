"""Settings from the environment (`JOBWIRE_*`), read once by the composition root.

Durations are seconds (float); sizes are bytes. List-valued settings are comma-separated
strings (pydantic-settings would otherwise parse list values as JSON).
"""

from __future__ import annotations

import re
import socket
from pathlib import Path
from typing import Annotated, Literal

from pydantic import Field, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

_SCHEMA_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,62}$")
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
    public_url: str | None = Field(None, description="base URL handlers call back; default http://<host>:<port>")
    api_keys: Annotated[list[str], NoDecode] = Field(
        default_factory=list, description="Bearer keys for management routes; empty → open")
    node_name: str = Field(default_factory=socket.gethostname, description="first part of the node id")
    queues: Annotated[list[str], NoDecode] = Field(
        default_factory=list, description="queues this node claims from; empty → all")
    concurrency: int = Field(64, ge=1, le=10_000, description="in-flight HTTP calls per node")
    dispatch_client: Literal["http11", "aiohttp"] = Field(
        "http11", description="HTTP client of handler calls: the built-in HTTP/1.1 client, or aiohttp")
    poll_interval: float = Field(1.0, gt=0, description="seconds between fallback claim polls")
    execution_timeout: float = Field(120.0, gt=0, le=7 * 86400, description="default attempt deadline, seconds")
    retry_base_delay: float = Field(1.0, ge=0, description="first retry delay, seconds")
    retry_max_delay: float = Field(3600.0, ge=0, description="cap on any retry delay, seconds")
    heartbeat_interval: float = Field(10.0, gt=0, description="seconds between node heartbeats")
    heartbeat_timeout: float = Field(60.0, gt=0, description="a node silent this long is dead")
    scan_interval: float = Field(30.0, gt=0, description="seconds between dead-node and deadline scans")
    misfire_threshold: float = Field(60.0, ge=0, description="cron lateness before a fire counts as missed")
    scheduler_interval: float = Field(1.0, gt=0, le=60, description="seconds between cron scheduler ticks")
    shutdown_grace: float = Field(30.0, ge=0, description="drain time on SIGTERM, seconds")
    max_payload_bytes: int = Field(1_048_576, ge=1, description="one job's payload + parameters + metadata")
    max_request_bytes: int = Field(16_777_216, ge=1, description="any request body")

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

    @property
    def effective_public_url(self) -> str:
        if self.public_url:
            return self.public_url.rstrip("/")
        host = "127.0.0.1" if self.host in _WILDCARD_HOSTS else self.host
        if ":" in host and not host.startswith("["):
            host = f"[{host}]"
        return f"http://{host}:{self.port}"
