"""Job: the dispatch request's body, parsed once, as the handler reads it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any


class NotADispatch(ValueError):
    """A verified body that is not a Jobwire dispatch (the text of the 400)."""


@dataclass(frozen=True, slots=True)
class Job:
    """One attempt of one execution. `execution_id` is the same on every attempt (make work
    idempotent on it); `attempt` counts from 0. `deadline` is when Jobwire gives up on the
    attempt unless it hears from it (each progress or heartbeat moves it). `raw` is the whole
    body, for fields newer than this toolkit."""

    execution_id: str
    attempt: int
    payload: Any
    parameters: dict[str, Any] | None
    metadata: dict[str, Any] | None
    job_id: str
    job_type: str | None
    queue: str | None
    max_attempts: int | None
    scheduled_at: datetime | None
    started_at: datetime | None
    deadline: datetime | None
    callback_url: str
    callback_token: str = field(repr=False)
    raw: Mapping[str, Any] = field(repr=False, compare=False)

    @property
    def is_last_attempt(self) -> bool:
        """True when a failure of this attempt dead-letters the execution (no attempt follows)."""
        return self.max_attempts is not None and self.attempt + 1 >= self.max_attempts


def parse_job(document: Any) -> Job:
    if not isinstance(document, dict):
        raise NotADispatch("the body is not a JSON object")
    callback = document.get("callback")
    execution_id = document.get("execution_id")
    attempt = document.get("attempt")
    if not isinstance(execution_id, str) or not execution_id:
        raise NotADispatch("no execution_id")
    if not isinstance(attempt, int) or isinstance(attempt, bool) or attempt < 0:
        raise NotADispatch("no attempt")
    if not (isinstance(callback, dict) and isinstance(callback.get("url"), str)
            and isinstance(callback.get("token"), str)):
        raise NotADispatch("no callback url and token")
    max_attempts = document.get("max_attempts")
    return Job(
        execution_id=execution_id,
        attempt=attempt,
        payload=document.get("payload"),
        parameters=document.get("parameters"),
        metadata=document.get("metadata"),
        job_id=str(document.get("job_id") or execution_id),
        job_type=document.get("job_type"),
        queue=document.get("queue"),
        max_attempts=max_attempts if isinstance(max_attempts, int) else None,
        scheduled_at=_time(document.get("scheduled_at")),
        started_at=_time(document.get("started_at")),
        deadline=_time(document.get("deadline")),
        callback_url=callback["url"].rstrip("/"),
        callback_token=callback["token"],
        raw=document,
    )


def _time(value: Any) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        return datetime.fromisoformat(value)  # Jobwire writes RFC 3339 in UTC with a Z
    except ValueError:
        return None
