"""Handler log entries (DESIGN §5): levels, limits, and how a message is made storable."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum

from app.domain.text import truncate

MAX_ENTRIES_PER_CALL = 500
MAX_MESSAGE_CHARS = 8192
NULL_MESSAGE = "<null>"

# C0 controls except \t (09), \n (0A) and \r (0D); NUL among them (PostgreSQL text cannot hold it).
_C0_EXCEPT_WHITESPACE = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f]")


class LogLevel(StrEnum):
    INFO = "INFO"
    WARN = "WARN"
    ERROR = "ERROR"


@dataclass(frozen=True, slots=True)
class LogEntry:
    """One entry as stored: message normalized; logged_at None means the database's now()."""

    level: LogLevel
    message: str
    logged_at: datetime | None = None


@dataclass(frozen=True, slots=True)
class StoredLog:
    id: int
    attempt: int
    level: LogLevel
    message: str
    logged_at: datetime


def normalize_message(message: str | None) -> str:
    """A null message becomes `<null>`; C0 controls except \\n \\r \\t are removed; then a message
    over 8192 code points keeps the first 8192 and gains `…[truncated N chars]`, N counting the
    code points removed (an emoji is one, as Python counts). Other whitespace is kept as sent."""
    if message is None:
        return NULL_MESSAGE
    return truncate(_C0_EXCEPT_WHITESPACE.sub("", message), MAX_MESSAGE_CHARS)
