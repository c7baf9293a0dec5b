"""`client.jobs`: enqueue one job, or a batch of them atomically.

Every enqueue carries an idempotency key, the caller's (`idempotency_key=`, or the field of a
batch item) or one the client makes (`sdk-<uuid4>`), so a try sent again after a lost reply
returns the execution the first try stored instead of making a second one. (A debounced enqueue
that went to the waiting execution stores no key: it is not sent again, see `_resend`.)"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Unpack
from uuid import uuid4

from jobwire._protocol import Call, listed, path
from jobwire.models import Debounce, Execution
from jobwire.resources._driver import AsyncDriver, Driver, share_docs
from jobwire.types import Job, JobOptions


def new_idempotency_key() -> str:
    """A key for an enqueue the caller gave none."""
    return f"sdk-{uuid4()}"


def _field(value: Any) -> Any:
    """A field as sent: a Debounce as the API's `{key, delay_seconds, max_delay_seconds, mode}`."""
    if isinstance(value, Debounce):
        debounce = {"key": value.key, "delay_seconds": value.delay_seconds, "mode": value.mode}
        if value.max_delay_seconds is not None:
            debounce["max_delay_seconds"] = value.max_delay_seconds
        return debounce
    return value


def as_sent(job: Mapping[str, Any]) -> dict[str, Any]:
    """The job as sent: None fields left out (they mean the default), an idempotency key added."""
    sent = {k: _field(v) for k, v in job.items() if v is not None}
    sent.setdefault("idempotency_key", new_idempotency_key())
    return sent


def _trace(traceparent: str | None) -> dict[str, str]:
    return {"traceparent": traceparent} if traceparent else {}


def enqueue_job(handler: str, payload: Any, options: JobOptions, traceparent: str | None) -> Call[Execution]:
    job = as_sent({"handler": handler, "payload": payload, **options})
    return Call("enqueueJob", "POST", path("jobs"), Execution.from_json, body=job, headers=_trace(traceparent),
                name=handler)


def enqueue_jobs(jobs: Iterable[Job | Mapping[str, Any]], traceparent: str | None) -> Call[list[Execution]]:
    body = {"jobs": [as_sent(job) for job in jobs]}
    return Call("enqueueJobs", "POST", path("jobs", "batch"), listed(Execution.from_json), body=body,
                headers=_trace(traceparent))


def enqueue_jobs_minimal(jobs: Iterable[Job | Mapping[str, Any]], traceparent: str | None) -> Call[list[str]]:
    body = {"jobs": [as_sent(job) for job in jobs]}
    return Call("enqueueJobs", "POST", path("jobs", "batch"), lambda answer: list(answer["ids"]), body=body,
                headers={"prefer": "return=minimal", **_trace(traceparent)})


class Jobs:
    """`client.jobs`."""

    def __init__(self, driver: Driver) -> None:
        self._driver = driver

    def enqueue(self, handler: str, payload: Any = None, *, traceparent: str | None = None,
                **options: Unpack[JobOptions]) -> Execution:
        """Enqueue one job → its Execution (`options` are the fields of `POST /v1/jobs`: `queue`,
        `priority`, `run_at`, `delay_seconds`, `max_attempts`, `idempotency_key`,
        `concurrency_key`, `debounce`, …; `traceparent` goes as the header). A repeated key with
        the same job returns the first execution; with a different one, 422. With `debounce` (a
        `Debounce`, or that mapping) an enqueue while an execution of the handler and key waits
        goes to it: the answer is that execution with `debounced` True (False: a new one); not
        sent again after a lost reply (`Unavailable.maybe_applied`)."""
        return self._driver.run(enqueue_job(handler, payload, options, traceparent))

    def enqueue_batch(self, jobs: Iterable[Job | Mapping[str, Any]], *,
                      traceparent: str | None = None) -> list[Execution]:
        """Enqueue 1–1,000 jobs atomically (each with `handler` and the fields of `enqueue` but
        `debounce`, which a batch refuses) → their Executions in order, each with `created`
        (False: its idempotency key found it). One invalid job refuses them all, naming it
        (`jobs[3].payload`)."""
        return self._driver.run(enqueue_jobs(jobs, traceparent))

    def enqueue_batch_ids(self, jobs: Iterable[Job | Mapping[str, Any]], *,
                          traceparent: str | None = None) -> list[str]:
        """As `enqueue_batch`, answered by the execution ids alone, in order (`Prefer:
        return=minimal`: nothing of the executions is sent back; an item its idempotency key
        found is the id stored before)."""
        return self._driver.run(enqueue_jobs_minimal(jobs, traceparent))


class AsyncJobs:
    """`client.jobs` of the asyncio client."""

    def __init__(self, driver: AsyncDriver) -> None:
        self._driver = driver

    async def enqueue(self, handler: str, payload: Any = None, *, traceparent: str | None = None,
                      **options: Unpack[JobOptions]) -> Execution:
        return await self._driver.run(enqueue_job(handler, payload, options, traceparent))

    async def enqueue_batch(self, jobs: Iterable[Job | Mapping[str, Any]], *,
                            traceparent: str | None = None) -> list[Execution]:
        return await self._driver.run(enqueue_jobs(jobs, traceparent))

    async def enqueue_batch_ids(self, jobs: Iterable[Job | Mapping[str, Any]], *,
                                traceparent: str | None = None) -> list[str]:
        return await self._driver.run(enqueue_jobs_minimal(jobs, traceparent))


share_docs(AsyncJobs, Jobs)
