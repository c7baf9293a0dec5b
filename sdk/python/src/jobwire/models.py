"""The execution, as the API shows it.

A small frozen dataclass rather than a validating model: the SDK stays light, and a field a
newer Jobwire adds is not an error. The declared fields are the API's execution object (times
parsed into aware datetimes); anything else the server sends stays in `raw` and is readable as
an attribute too, so a client older than its server still sees every field.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from datetime import datetime
from typing import Any

# States no writer moves on by itself (only a user's retry does): SUCCEEDED, DEAD_LETTER and
# CANCELLED; and ABANDONED, where a cron fire stays (a delayed job is re-enqueued or dead-lettered
# in the same transaction, so it is never seen there). FAILED is transient, like ENQUEUED and
# PROCESSING: the attempt's retry or dead letter follows.
TERMINAL_STATES = frozenset({"SUCCEEDED", "DEAD_LETTER", "CANCELLED", "ABANDONED"})

_TIMES = ("scheduled_at", "created_at", "started_at", "completed_at", "deadline_at")


def parse_time(value: Any) -> datetime | None:
    """An RFC 3339 string from the API (`…Z` included) as an aware datetime; None stays None."""
    if value is None or isinstance(value, datetime):
        return value
    return datetime.fromisoformat(str(value).replace("Z", "+00:00"))


@dataclass(frozen=True, slots=True)
class Execution:
    id: str
    state: str
    job_id: str | None = None
    job_type: str | None = None
    handler: str | None = None
    queue: str | None = None
    attempt: int = 0
    max_attempts: int | None = None
    priority: int = 0
    stateful: bool = False
    payload: Any = None
    parameters: Any = None
    metadata: Any = None
    result: Any = None
    progress: dict[str, Any] | None = None
    scheduled_at: datetime | None = None
    created_at: datetime | None = None
    started_at: datetime | None = None
    completed_at: datetime | None = None
    deadline_at: datetime | None = None
    locked_by: str | None = None
    last_error: str | None = None
    error_type: str | None = None
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_json(cls, body: dict[str, Any]) -> Execution:
        known = {f.name for f in fields(cls)} - {"raw"}
        values = {name: body[name] for name in known if name in body}
        values.update({name: parse_time(values[name]) for name in _TIMES if name in values})
        return cls(**values, raw=dict(body))

    @property
    def is_terminal(self) -> bool:
        """True once no writer but a user's retry moves it on (see TERMINAL_STATES)."""
        return self.state in TERMINAL_STATES

    def __getattr__(self, name: str) -> Any:
        # Reached only for names that are not fields: a newer server's field, from `raw`.
        if name.startswith("__") or name == "raw":
            raise AttributeError(name)
        try:
            return self.raw[name]
        except KeyError:
            raise AttributeError(f"Execution has no field {name!r}") from None
