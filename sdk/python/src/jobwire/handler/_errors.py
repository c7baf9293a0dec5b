"""The exceptions a handler raises or meets: Permanent (no retry), Suspend (a durable wait) and
CallbackError."""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import Any


class Permanent(Exception):
    """Raise it from `handle` to fail the attempt with no retry: the execution dead-letters at
    once, whatever attempts remain. For failures another attempt cannot fix (a malformed
    payload, a refused card). `error_type` names the failure on the attempt (default the
    class name, `Permanent`): a name as handlers are named, cut to 100 characters; another
    (or one beginning with `abandoned_`, Jobwire's own) is sent as `handler_failed`."""

    def __init__(self, message: str = "", *, error_type: str | None = None) -> None:
        super().__init__(message)
        self.error_type = error_type


class CallbackError(Exception):
    """A callback Jobwire refused (`status`: its HTTP status), or that got no answer it could use
    (no answer, 429, 502, 503, 504) until the attempt's deadline (`gave_up`; `status`: the last
    answer's, None for none). Raised by `ctx.run_step_once`; the toolkit's own callbacks
    (progress, logs, heartbeats) log it and carry on."""

    def __init__(self, message: str, status: int | None = None, *, gave_up: bool = False) -> None:
        super().__init__(message)
        self.status = status
        self.gave_up = gave_up


class Suspend(BaseException):
    """Raised by `ctx.suspend(…)` (or raise it yourself) to end the attempt with a wait instead of
    an outcome: the toolkit answers `{"suspend": …}` (or reports `outcome: suspended` after a 202),
    and Jobwire holds the execution WAITING, the same attempt, with no slot, until `until` (an
    aware datetime) or `seconds` from now, a signal named in `signals`, the end of every child it
    spawned (`children=True`), or `timeout_seconds`, whichever comes first; then it dispatches it
    again with `job.resume` and `job.steps`. `steps` records run-step-once results with the
    suspension (no callback of their own). A mistake (no zone, a negative or too long wait, a bad
    name, nothing to wait for) is a ValueError where it is made. A BaseException, as
    KeyboardInterrupt is: an `except Exception` in the handler does not stop it on its way out."""

    def __init__(self, *, until: datetime | None = None, seconds: float | None = None,
                 signals: str | Iterable[str] = (), children: bool = False, timeout_seconds: float | None = None,
                 steps: Mapping[str, Any] | None = None) -> None:
        self.document = suspend_document(until, seconds, signals, timeout_seconds, steps, children)
        super().__init__(_described(self.document))


MAX_WAIT_SECONDS = 365 * 86400  # Jobwire's limit on a wait (until, seconds, timeout_seconds)
MAX_WAIT_SIGNALS = 100
WAIT_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]{0,254}")  # a signal's or a step's name


def _seconds(value: Any, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
            or not 0 <= value <= MAX_WAIT_SECONDS:
        raise ValueError(f"{name} is a number of seconds from 0 to {MAX_WAIT_SECONDS} (365 days), not {value!r}")
    return float(value)


def suspend_document(until: datetime | None, seconds: float | None, signals: str | Iterable[str],
                     timeout_seconds: float | None, steps: Mapping[str, Any] | None,
                     children: bool = False) -> dict[str, Any]:
    """The `suspend` object of the reply, checked as Jobwire checks it."""
    document: dict[str, Any] = {}
    if until is not None and seconds is not None:
        raise ValueError("suspend until a time or for some seconds, not both")
    if until is not None:
        if not isinstance(until, datetime) or until.tzinfo is None or until.utcoffset() is None:
            raise ValueError(f"until is an aware datetime (with a zone), not {until!r}")
        if (until - datetime.now(UTC)).total_seconds() > MAX_WAIT_SECONDS:
            raise ValueError(f"until is at most 365 days ahead, not {until.isoformat()}")
        document["until"] = until.astimezone(UTC).isoformat().replace("+00:00", "Z")
    elif seconds is not None:
        document["seconds"] = _seconds(seconds, "seconds")
    names = [signals] if isinstance(signals, str) else list(signals)
    for name in names:
        if not isinstance(name, str) or not WAIT_NAME.fullmatch(name):
            raise ValueError(f"a signal name matches {WAIT_NAME.pattern}, not {name!r}")
    if len(names) > MAX_WAIT_SIGNALS:
        raise ValueError(f"a wait names at most {MAX_WAIT_SIGNALS} signals, not {len(names)}")
    if names:
        document["signals"] = list(dict.fromkeys(names))
    if not isinstance(children, bool):
        raise ValueError(f"children is True (wait for every child this execution spawned) or False, not {children!r}")
    if children:
        document["children"] = "all"
    if timeout_seconds is not None:
        document["timeout_seconds"] = _seconds(timeout_seconds, "timeout_seconds")
    if not document:
        raise ValueError("suspend waits for something: until, seconds, signals, children or timeout_seconds")
    if steps:
        for name in steps:
            if not isinstance(name, str) or not WAIT_NAME.fullmatch(name):
                raise ValueError(f"a step name matches {WAIT_NAME.pattern}, not {name!r}")
        document["steps"] = dict(steps)
    return document


def _described(document: Mapping[str, Any]) -> str:
    waits = [f"until {document['until']}" if "until" in document else "",
             f"for {document['seconds']:g} s" if "seconds" in document else "",
             f"for a signal ({', '.join(document['signals'])})" if "signals" in document else "",
             "for its children" if "children" in document else "",
             f"at most {document['timeout_seconds']:g} s" if "timeout_seconds" in document else ""]
    return "suspended: waits " + ", or ".join(w for w in waits if w)
