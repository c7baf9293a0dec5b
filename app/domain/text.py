"""Text that came from outside (handler replies, logs) made safe to store."""

from __future__ import annotations

MAX_ERROR_CHARS = 2000


def strip_nul(text: str) -> str:
    return text.replace("\x00", "")


def truncate(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    removed = len(text) - limit
    return f"{text[:limit]}…[truncated {removed} chars]"


def error_text(text: str, limit: int = MAX_ERROR_CHARS) -> str:
    """A handler's words (status line, body, exception) as stored in last_error."""
    # Lone surrogates cannot be encoded for PostgreSQL; replace them.
    cleaned = strip_nul(text).encode("utf-8", "replace").decode("utf-8")
    return truncate(cleaned, limit)
