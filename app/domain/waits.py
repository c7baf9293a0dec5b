"""Durable waits (DESIGN §9): a handler answers a dispatch with `{"suspend": {...}}` (or reports
`outcome: "suspended"` through /complete) and the execution goes WAITING with the same attempt,
holding no slot, until a time, a named signal, the end of every child it spawned, or a timeout;
then it is dispatched again as a new message (`webhook-id: <execution id>.r<n>`). Signals are a
durable mailbox: a signal sent before the wait that names it is kept and consumed by that wait, once."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from enum import StrEnum
from typing import Any

from app.domain.names import is_valid_name

MAX_SUSPENSIONS = 100  # per execution: the 101st is a failure (too_many_suspensions)
MAX_WAIT = timedelta(days=365)  # `until` (or `seconds`, or the timeout) at most this far ahead
MAX_SIGNALS_PER_WAIT = 100
MAX_SIGNAL_PAYLOAD_BYTES = 64 * 1024


class ResumeReason(StrEnum):
    TIMER = "timer"  # `until` (or `seconds`) came
    SIGNAL = "signal"  # a signal the wait names arrived (or was waiting for it)
    CHILDREN = "children"  # every child the execution spawned is terminal
    TIMEOUT = "timeout"  # `timeout_seconds` passed first


@dataclass(frozen=True, slots=True)
class Suspend:
    """What a handler asks to wait for: until, signals, children, a timeout (alone, it is a timer)."""

    until: datetime | None = None
    signals: tuple[str, ...] = ()
    children: bool = False  # `children: "all"`: until every child it spawned is terminal
    timeout_seconds: float | None = None
    steps: Mapping[str, Any] = field(default_factory=dict)  # recorded as run-step-once results


class InvalidSuspend(ValueError):
    """A `suspend` object Jobwire cannot honour: the attempt fails with this message."""


def _seconds(value: Any, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
        raise InvalidSuspend(f"suspend.{name}: a number of seconds, at least 0")
    if value > MAX_WAIT.total_seconds():
        raise InvalidSuspend(f"suspend.{name}: at most {int(MAX_WAIT.total_seconds())} seconds (365 days)")
    return float(value)


def parse_suspend(document: Any, now: datetime) -> Suspend:
    """The `suspend` object of a reply or a /complete call; InvalidSuspend naming what is wrong.
    `now` is the node's clock, used only to turn `seconds` into a time and to bound `until`: the
    database decides when the wait ends (its own now() against the stored time)."""
    if not isinstance(document, dict):
        raise InvalidSuspend("suspend: a JSON object")
    unknown = set(document) - {"until", "seconds", "signals", "children", "timeout_seconds", "steps"}
    if unknown:
        raise InvalidSuspend(f"suspend: unknown member(s) {', '.join(sorted(unknown))}")
    children = document.get("children")
    if children not in (None, "all"):
        raise InvalidSuspend('suspend.children: "all" (every child this execution spawned), or absent')
    until: datetime | None = None
    if document.get("until") is not None and document.get("seconds") is not None:
        raise InvalidSuspend("suspend: give until or seconds, not both")
    if document.get("until") is not None:
        text = document["until"]
        try:
            until = datetime.fromisoformat(text.replace("Z", "+00:00")) if isinstance(text, str) else None
        except ValueError:
            until = None
        if until is None or until.tzinfo is None:
            raise InvalidSuspend("suspend.until: an RFC 3339 time with a zone")
        if until - now > MAX_WAIT:
            raise InvalidSuspend("suspend.until: at most 365 days ahead")
    elif document.get("seconds") is not None:
        until = now + timedelta(seconds=_seconds(document["seconds"], "seconds"))
    signals = document.get("signals") or []
    if not isinstance(signals, list) or not all(isinstance(s, str) and is_valid_name(s) for s in signals) \
            or len(signals) > MAX_SIGNALS_PER_WAIT:
        raise InvalidSuspend(f"suspend.signals: a list of at most {MAX_SIGNALS_PER_WAIT} names")
    timeout = document.get("timeout_seconds")
    timeout_seconds = None if timeout is None else _seconds(timeout, "timeout_seconds")
    steps = document.get("steps") or {}
    if not isinstance(steps, dict) or not all(is_valid_name(k) for k in steps):
        raise InvalidSuspend("suspend.steps: an object of step names to results")
    if until is None and not signals and children is None and timeout_seconds is None:
        raise InvalidSuspend("suspend: wait for something: until, seconds, signals, children or timeout_seconds")
    return Suspend(until=until.astimezone(UTC) if until else None, signals=tuple(dict.fromkeys(signals)),
                   children=children == "all", timeout_seconds=timeout_seconds, steps=steps)


@dataclass(frozen=True, slots=True)
class Signal:
    id: int
    execution_id: Any
    name: str
    payload: Any
    sent_at: datetime
    consumed_at: datetime | None
