"""Context: what `handle` reports through while it works — progress, logs, steps, cancellation —
and how it suspends. It checks what it is given where the handler can see the mistake, and hands
the rest to the attempt's Reporter (progress, logs) or asks Jobwire (steps, cancellation)."""

from __future__ import annotations

import inspect
import re
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping
from datetime import datetime
from typing import Any, NoReturn, TypeVar

from jobwire.handler._callbacks import Callbacks
from jobwire.handler._errors import Suspend
from jobwire.handler._job import Child, Job, Parent, parent_of
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
    sends what is pending before the attempt's outcome. `run_step_once`, `is_cancelled`,
    `parents`, `spawn` and `children` are awaited: their answer comes from Jobwire (or from the dispatch, when it holds
    it). `suspend` ends the attempt with a durable wait. Call them from the event loop's
    thread."""

    def __init__(self, job: Job, callbacks: Callbacks, reporter: Reporter) -> None:
        self.job = job
        self._callbacks = callbacks
        self._reporter = reporter
        # Steps known recorded: the dispatch's (a job that suspended), and those this attempt read
        # or recorded. A recorded step never changes, so none is asked for twice.
        self._steps: dict[str, Any] = dict(job.steps)

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
        idempotency key. A step the dispatch holds (`job.steps`: a job that suspended gets every
        step recorded so far) or that this attempt already read or recorded is answered at once,
        without asking Jobwire. Through an outage of Jobwire it asks again until the attempt's
        deadline; raises CallbackError when Jobwire refuses, or is away until the deadline."""
        if not isinstance(name, str) or not STEP_NAME.fullmatch(name):
            raise ValueError(f"a step name matches {STEP_NAME.pattern}, not {name!r}")
        if name in self._steps:
            return self._steps[name]  # type: ignore[no-any-return]
        found, stored = await self._callbacks.get_step(name)
        if not found:
            value = fn()
            if inspect.isawaitable(value):
                value = await value
            stored = await self._callbacks.put_step(name, value)
        self._steps[name] = stored
        return stored  # type: ignore[no-any-return]

    def suspend(self, *, until: datetime | None = None, seconds: float | None = None,
                signals: str | Iterable[str] = (), children: bool = False, timeout_seconds: float | None = None,
                steps: Mapping[str, Any] | None = None) -> NoReturn:
        """End this attempt with a durable wait (raises `Suspend`, which the toolkit answers as
        `{"suspend": …}`): the execution goes WAITING, the same attempt, holding no slot, until
        `until` (an aware datetime, at most 365 days ahead) or `seconds` from now, until a signal
        named in `signals` arrives (`client.executions.signal`; one sent earlier and not consumed
        counts at once), with `children=True` until every child it spawned (`ctx.spawn`) is
        terminal, or until `timeout_seconds` pass, whichever comes first. Then Jobwire
        dispatches it again: `job.resume` says why (`reason` `timer`, `signal`, `children` or
        `timeout`, the `signals` consumed, with their payloads, and for a wait on its children
        each child with its state and result), and `job.steps` holds every step recorded,
        so a handler that keeps no state replays to where it was (`run_step_once` answers from
        it). `steps` records results as run-step-once steps with the suspension itself. A
        resumption spends no attempt; at most 100 suspensions an execution. A mistake in what it
        is given raises ValueError here."""
        raise Suspend(until=until, seconds=seconds, signals=signals, children=children,
                      timeout_seconds=timeout_seconds, steps=steps)

    async def parents(self) -> dict[str, Parent]:
        """A job of a workflow: its direct parents by ref, each with its result (`job.parents`,
        whose results the dispatch leaves out once they total more than 256 KiB). Asks Jobwire
        only when the dispatch left them out, then a page of 1,000 parents at a time; {} for a
        job outside workflows, or a root. Through an outage of Jobwire it asks again until the
        attempt's deadline; raises CallbackError when Jobwire refuses (409: the attempt is no
        longer current), or is away until the deadline."""
        known = self.job.parents
        if all(parent.has_result for parent in known.values()):
            return dict(known)
        return await self._every("parents")

    async def spawn(self, jobs: Iterable[Mapping[str, Any]]) -> dict[str, str]:
        """Spawn children of this execution (at most 1,000 a call): each a job as
        `client.workflows.create` takes them, `{"ref": …, "handler": …, "payload": …}` and any
        other field of a job, with `depends_on` naming refs this execution spawned. They join
        its workflow (one is made for a job outside workflows) and run at once unless they
        depend on one another. Returns their execution ids by ref. Idempotent per ref: a replay
        of this handler (after a resumption or a retry) that spawns the same refs gets the same
        executions back, whatever it sends with them. Then `ctx.suspend(children=True)` waits
        for all of them: fan-out and fan-in in one handler. Raises CallbackError when Jobwire
        refuses (422 naming the field, 409: the attempt is no longer running)."""
        items = await self._callbacks.spawn([dict(job) for job in jobs])
        return {str(item.get("ref")): str(item.get("execution_id")) for item in items}

    async def children(self) -> dict[str, Child]:
        """Every child this execution spawned, by ref, with its state and result: from
        `job.resume.children` when the dispatch carries them all with their results, else asked
        of Jobwire a page of 1,000 at a time."""
        known = self.job.resume.children if self.job.resume is not None else {}
        if known and all(child.has_result for child in known.values()):
            return dict(known)
        return await self._every("children")

    async def _every(self, kind: str) -> dict[str, Parent]:
        found: dict[str, Parent] = {}
        after: str | None = ""
        while after is not None:
            items, after = await self._callbacks.page(kind, after)
            for item in items:
                ref = str(item.get("ref"))
                found[ref] = parent_of(ref, item)
        return found

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
