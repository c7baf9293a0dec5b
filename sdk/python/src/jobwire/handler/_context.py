"""Context: what `handle` reports through while it works — progress, logs, steps, cancellation.
It checks what it is given where the handler can see the mistake, and hands the rest to the
attempt's Reporter (progress, logs) or asks Jobwire (steps, cancellation)."""

from __future__ import annotations

import inspect
import re
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from jobwire.handler._callbacks import Callbacks
from jobwire.handler._job import Job
from jobwire.handler._reporter import Reporter

T = TypeVar("T")

# is_cancelled() asks Jobwire at most this often; in between it answers what it last heard.
CANCEL_CHECK_INTERVAL = 1.0
MAX_COUNT = 2**62
MAX_STATUS = 1000
LEVELS = {"INFO": "INFO", "WARN": "WARN", "WARNING": "WARN", "ERROR": "ERROR"}
STEP_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]{0,254}")


class Context:
    """Passed to `handle(job, ctx)` beside the job (also `ctx.job`).

    `progress` and `log` return at once: the toolkit sends them in the background (a tight
    loop may call them per item; progress snapshots are merged while one is in flight) and
    sends what is pending before the attempt's outcome. `run_step_once` and `is_cancelled`
    are awaited: their answer comes from Jobwire. Call them from the event loop's thread."""

    def __init__(self, job: Job, callbacks: Callbacks, reporter: Reporter) -> None:
        self.job = job
        self._callbacks = callbacks
        self._reporter = reporter

    def progress(self, *, total: int | None = None, succeeded: int | None = None, failed: int | None = None,
                 status: str | None = None) -> None:
        """Merge a snapshot into the execution's progress (omitted fields keep their values);
        shown as `progress` on GET /v1/executions/{id}, with a percentage. Each snapshot sent
        also moves the attempt's deadline, like a heartbeat. A `status` over 1,000 characters
        is cut to 1,000."""
        fields: dict[str, Any] = {}
        for name, value in (("total", total), ("succeeded", succeeded), ("failed", failed)):
            if value is None:
                continue
            if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= MAX_COUNT:
                raise ValueError(f"progress {name} is a whole number from 0 to 2**62, not {value!r}")
            fields[name] = value
        if status is not None:
            fields["status"] = str(status)[:MAX_STATUS]
        self._reporter.progress(fields)

    def log(self, level: str, message: object) -> None:
        """Append a log line (level INFO, WARN or ERROR; WARNING is WARN) to the execution's
        logs (GET /v1/executions/{id}/logs), stamped now. Sent in batches of at most 500; a
        batch Jobwire refuses or cannot take is dropped with a warning on the `jobwire.handler`
        logger, and never fails the job."""
        normalized = LEVELS.get(str(level).upper())
        if normalized is None:
            raise ValueError(f"log level is INFO, WARN or ERROR, not {level!r}")
        self._reporter.log(normalized, None if message is None else str(message))

    async def run_step_once(self, name: str, fn: Callable[[], Awaitable[T] | T]) -> T:
        """The result of step `name` of this execution: the stored one when any attempt already
        recorded it (fn is not called), else fn's, recorded before it is returned. The result
        is JSON, returned as Jobwire stored it (a tuple comes back a list, every time). A step
        that ran but was not recorded (the process died in between) runs again: make its work
        idempotent too where that matters, e.g. with f"{job.execution_id}:{name}" as an
        idempotency key. Through an outage of Jobwire it asks again until the attempt's
        deadline; raises CallbackError when Jobwire refuses, or is away until the deadline."""
        if not isinstance(name, str) or not STEP_NAME.fullmatch(name):
            raise ValueError(f"a step name matches {STEP_NAME.pattern}, not {name!r}")
        found, stored = await self._callbacks.get_step(name)
        if found:
            return stored  # type: ignore[no-any-return]
        value = fn()
        if inspect.isawaitable(value):
            value = await value
        return await self._callbacks.put_step(name, value)  # type: ignore[no-any-return]

    async def is_cancelled(self) -> bool:
        """True once the execution is no longer this attempt's to finish: cancelled by a user,
        past its deadline, or taken over by a newer attempt. Stop then; a completion would
        change nothing. Asks Jobwire (a heartbeat, which also moves the deadline) at most once
        a second; progress and heartbeat answers in between count too. When Jobwire cannot be
        reached it answers what it last heard (it does not wait for Jobwire to come back)."""
        reporter = self._reporter
        now = time.monotonic()
        if not reporter.cancelled and now - max(reporter.heard_at, reporter.asked_at) >= CANCEL_CHECK_INTERVAL:
            reporter.asked_at = now  # a failed ask too: an outage is not asked about in a tight loop
            await reporter.heartbeat(retry=False)
        return reporter.cancelled
