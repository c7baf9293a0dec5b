"""Log lines (JOBWIRE_LOG_FORMAT): text is the message then `key=value` for each field of
`extra=fields(...)`; json is one object per line with time (RFC 3339 UTC), level, logger, message,
the fields as members and an exception as a string. Both apply to uvicorn's loggers too."""

from __future__ import annotations

import io
import json
import logging
import re
from collections.abc import Iterator
from enum import StrEnum
from uuid import UUID

import pytest

from app import logging_setup
from app.config import Settings
from app.domain.logfields import fields

EXECUTION = UUID("0190a7c2-0000-7000-8000-000000000001")
RFC3339_UTC = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")


class Kind(StrEnum):
    HTTP = "http_status"


@pytest.fixture
def configured(logging_restored: None) -> Iterator[object]:
    """Runs logging_setup.configure into a buffer (the logging configuration put back after)."""

    def configure(log_format: str, level: str = "info") -> io.StringIO:
        buffer = io.StringIO()
        logging_setup.configure(log_format, level, stream=buffer)
        return buffer

    yield configure


def attempt_failed() -> None:
    logging.getLogger("app.services.outcomes").warning(
        "attempt failed", extra=fields(execution_id=EXECUTION, attempt=2, handler="mailer", queue="default",
                                       node="n-1", error_type=Kind.HTTP, duration_ms=12.5,
                                       error="HTTP 500 Internal Server Error", skipped=None))


def test_text_is_the_message_then_key_value_fields(configured) -> None:
    out = configured("text")
    attempt_failed()
    [line] = out.getvalue().splitlines()
    time, level, rest = line.split(" ", 2)
    assert RFC3339_UTC.match(time) and level == "WARNING"
    assert rest == ('app.services.outcomes: attempt failed execution_id=0190a7c2-0000-7000-8000-000000000001 '
                    'attempt=2 handler=mailer queue=default node=n-1 error_type=http_status duration_ms=12.5 '
                    'error="HTTP 500 Internal Server Error"')


def test_json_is_one_object_per_line_with_the_fields_as_members(configured) -> None:
    out = configured("json")
    attempt_failed()
    [line] = out.getvalue().splitlines()
    document = json.loads(line)
    assert RFC3339_UTC.match(document.pop("time"))
    assert document == {"level": "WARNING", "logger": "app.services.outcomes", "message": "attempt failed",
                        "execution_id": str(EXECUTION), "attempt": 2, "handler": "mailer", "queue": "default",
                        "node": "n-1", "error_type": "http_status", "duration_ms": 12.5,
                        "error": "HTTP 500 Internal Server Error"}


def test_an_exception_is_a_string_member_in_json_and_follows_the_line_in_text(configured) -> None:
    out = configured("json")
    try:
        raise RuntimeError("boom")
    except RuntimeError:
        logging.getLogger("jobwire").exception("scan failed", extra=fields(node="n-1"))
    document = json.loads(out.getvalue())
    assert document["message"] == "scan failed" and document["node"] == "n-1"
    assert document["exception"].startswith("Traceback") and "RuntimeError: boom" in document["exception"]

    out = configured("text")
    try:
        raise RuntimeError("bang")
    except RuntimeError:
        logging.getLogger("jobwire").exception("scan failed")
    lines = out.getvalue().splitlines()
    assert lines[0].endswith("jobwire: scan failed") and lines[1].startswith("Traceback")


def test_a_field_never_replaces_the_lines_own_members_and_odd_values_stay_one_line(configured) -> None:
    out = configured("json")
    logging.getLogger("jobwire").info("hello %s", "world", extra=fields(message="not this", level="nor this",
                                                                         nodes=["a", "b"], text="two\nlines"))
    document = json.loads(out.getvalue())
    assert (document["message"], document["level"]) == ("hello world", "INFO")
    assert document["nodes"] == ["a", "b"] and document["text"] == "two\nlines"

    out = configured("text")
    logging.getLogger("jobwire").info("hello", extra=fields(nodes=["a", "b"], text='say "hi"\n', empty="",
                                                            flag=True))
    [line] = out.getvalue().splitlines()
    assert line.endswith('hello nodes=["a","b"] text="say \\"hi\\"\\n" empty="" flag=true')


def test_uvicorns_lines_take_the_same_format(configured) -> None:
    out = configured("json")
    logging.getLogger("uvicorn.error").info("Started server process [%d]", 42)
    document = json.loads(out.getvalue())
    assert (document["logger"], document["message"]) == ("uvicorn.error", "Started server process [42]")
    assert logging.getLogger("uvicorn.error").handlers == [] and logging.getLogger("uvicorn.error").propagate


def test_successes_at_debug_appear_only_at_the_debug_level(configured) -> None:
    out = configured("text", "info")
    logging.getLogger("app.services.outcomes").debug("attempt succeeded", extra=fields(attempt=0))
    assert out.getvalue() == ""
    out = configured("text", "debug")
    logging.getLogger("app.services.outcomes").debug("attempt succeeded", extra=fields(attempt=0))
    assert "attempt succeeded attempt=0" in out.getvalue()
    # Other libraries stay at INFO: their DEBUG lines would drown Jobwire's.
    logging.getLogger("asyncio").debug("selector noise")
    assert "selector noise" not in out.getvalue()


def test_log_format_is_a_setting_read_from_jobwire_log_format(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("JOBWIRE_LOG_FORMAT", raising=False)
    assert Settings().log_format == "text"
    monkeypatch.setenv("JOBWIRE_LOG_FORMAT", "JSON")
    assert Settings().log_format == "json"
    monkeypatch.setenv("JOBWIRE_LOG_FORMAT", "xml")
    with pytest.raises(ValueError, match="'text' or 'json'"):
        Settings()
