"""Every client method, written once.

Each method builds its request (a `Call`, or a program such as `wait`'s) and hands it to the
client's driver: `_run` for one result, `_iterate` for a listing that follows `next_cursor`.
`JobwireClient`'s driver returns the result; `AsyncJobwireClient`'s returns an awaitable of it
(and an async iterator for listings). That is why the methods carry no return annotations: the
docstrings say what each gives, as the sync client returns it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any
from uuid import UUID, uuid4

from jobwire._protocol import Call, as_is, executions, items, paged, path, wait
from jobwire._retry import Retries
from jobwire.models import Execution, parse_time

Id = str | UUID


def new_idempotency_key() -> str:
    """A key for an enqueue the caller gave none: a retry then returns the first execution
    instead of inserting a second one."""
    return f"sdk-{uuid4()}"


def _with_key(job: Mapping[str, Any]) -> dict[str, Any]:
    """The job as sent: None fields left out (they mean the default), an idempotency key added."""
    job = {k: v for k, v in job.items() if v is not None}
    job.setdefault("idempotency_key", new_idempotency_key())
    return job


def _trace(traceparent: str | None) -> dict[str, str]:
    return {"traceparent": traceparent} if traceparent else {}


class Operations:
    """The API's operations; a driver subclass supplies `_run`, `_iterate` and `_retries`."""

    _retries: Retries

    def _run(self, work: Any) -> Any:
        raise NotImplementedError

    def _iterate(self, call: Call[Any]) -> Any:
        raise NotImplementedError

    # --- handlers --------------------------------------------------------------------------

    def put_handler(self, name: str, url: str, **opts: Any):
        """Register or replace a handler (`timeout_seconds`, `max_concurrency`, `stateful`, …) → its
        dict; on a create it holds the signing `secret`, shown this once."""
        return self._run(Call("PUT", path("handlers", name), as_is, body={"url": url, **opts}, repeatable=True))

    def get_handler(self, name: str):
        """→ the handler's dict (no secret)."""
        return self._run(Call("GET", path("handlers", name), as_is, repeatable=True))

    def list_handlers(self):
        """→ a list of handler dicts."""
        return self._run(Call("GET", path("handlers"), items, repeatable=True))

    def delete_handler(self, name: str):
        """Remove a handler (409 while executions that are ENQUEUED or PROCESSING use it)."""
        return self._run(Call("DELETE", path("handlers", name), as_is, repeatable=True))

    def add_handler_secret(self, name: str, expire_others_after_seconds: float | None = None):
        """A new signing secret for a rotation → `{id, secret, created_at}` (the secret shown once)."""
        body = {} if expire_others_after_seconds is None else {"expire_others_after_seconds":
                                                               expire_others_after_seconds}
        return self._run(Call("POST", path("handlers", name, "secrets"), as_is, body=body))

    def delete_handler_secret(self, name: str, secret_id: Id):
        """Retire a signing secret (409 for the last one that does not expire)."""
        return self._run(Call("DELETE", path("handlers", name, "secrets", secret_id), as_is, repeatable=True))

    # --- jobs ------------------------------------------------------------------------------

    def enqueue(self, handler: str, payload: Any = None, *, traceparent: str | None = None, **fields: Any):
        """Enqueue one job → its Execution. `fields` are those of `POST /v1/jobs` (`queue`,
        `priority`, `run_at`, `delay_seconds`, `max_attempts`, `idempotency_key`, …). Without an
        `idempotency_key` the client makes one, so sending again after a lost reply is safe."""
        job = _with_key({"handler": handler, "payload": payload, **fields})
        return self._run(Call("POST", path("jobs"), Execution.from_json, body=job, headers=_trace(traceparent),
                              repeatable=True))

    def enqueue_batch(self, jobs: Iterable[Mapping[str, Any]], *, traceparent: str | None = None):
        """Enqueue 1–1,000 jobs atomically (dicts with `handler` and the fields of `enqueue`) → their
        Executions, in order. Each job without an `idempotency_key` gets one from the client."""
        body = {"jobs": [_with_key(job) for job in jobs]}
        return self._run(Call("POST", path("jobs", "batch"), executions, body=body, headers=_trace(traceparent),
                              repeatable=True))

    # --- executions ------------------------------------------------------------------------

    def get(self, execution_id: Id):
        """→ the Execution."""
        return self._run(self._get(execution_id))

    def _get(self, execution_id: Id) -> Call[Execution]:
        return Call("GET", path("executions", execution_id), Execution.from_json, repeatable=True)

    def list(self, **filters: Any):
        """Executions, newest first, following `next_cursor` to the end → an iterator of Executions
        (async: an async iterator). Filters: `state`, `queue`, `handler`, `job_id`; `limit` is the
        page size (default 50, at most 500)."""
        return self._iterate(paged(Call("GET", path("executions"), as_is, params=filters, repeatable=True),
                                   Execution.from_json))

    def wait(self, execution_id: Id, timeout: float = 60.0):
        """Poll until the execution is terminal (SUCCEEDED, DEAD_LETTER, CANCELLED, or ABANDONED for
        a cron fire) → that Execution; TimeoutError after `timeout` seconds."""
        return self._run(wait(self._get(execution_id), timeout, self._retries))

    def cancel(self, execution_id: Id):
        """ENQUEUED or PROCESSING → CANCELLED → the Execution (409 from other states)."""
        return self._run(Call("POST", path("executions", execution_id, "cancel"), Execution.from_json))

    def retry(self, execution_id: Id):
        """DEAD_LETTER or CANCELLED → ENQUEUED as a new attempt → the Execution (409 otherwise)."""
        return self._run(Call("POST", path("executions", execution_id, "retry"), Execution.from_json))

    def delete(self, execution_id: Id):
        """Delete a finished execution with its logs, steps and events (409 while ENQUEUED or
        PROCESSING)."""
        return self._run(Call("DELETE", path("executions", execution_id), as_is, repeatable=True))

    def attempts(self, execution_id: Id):
        """→ the attempt history, oldest first: a list of dicts."""
        return self._run(Call("GET", path("executions", execution_id, "attempts"), items, repeatable=True))

    def logs(self, execution_id: Id, *, limit: int | None = None):
        """The handlers' log entries, oldest first, following cursors → an iterator of dicts
        (async: an async iterator); `limit` is the page size."""
        return self._iterate(paged(Call("GET", path("executions", execution_id, "logs"), as_is,
                                        params={"limit": limit}, repeatable=True), as_is))

    def events(self, execution_id: Id, *, limit: int | None = None):
        """The transition events, oldest first, following cursors → an iterator of dicts."""
        return self._iterate(paged(Call("GET", path("executions", execution_id, "events"), as_is,
                                        params={"limit": limit}, repeatable=True), as_is))

    def _bulk(self, action: str, selection: Mapping[str, Any]) -> Any:
        body = {k: ([str(i) for i in v] if k == "ids" else v) for k, v in selection.items() if v is not None}
        return self._run(Call("POST", path("executions", f"bulk-{action}"), as_is, body=body, repeatable=True))

    def bulk_retry(self, **selection: Any):
        """DEAD_LETTER/CANCELLED → ENQUEUED for the executions selected by `state`, `queue`, `handler`,
        `job_id`, `ids` (at least one), at most `limit` → `{matched, changed, more}`."""
        return self._bulk("retry", selection)

    def bulk_cancel(self, **selection: Any):
        """ENQUEUED/PROCESSING → CANCELLED for the selection → `{matched, changed, more}`."""
        return self._bulk("cancel", selection)

    def bulk_delete(self, **selection: Any):
        """Delete the selected finished executions → `{matched, changed, more}`."""
        return self._bulk("delete", selection)

    # --- schedules -------------------------------------------------------------------------

    def put_schedule(self, job_id: str, cron: str, handler: str, **fields: Any):
        """Declare a cron schedule, the whole definition (`timezone`, `payload`, `enabled`,
        `overlap_policy`, …) → its dict."""
        body = {"cron": cron, "handler": handler, **fields}
        return self._run(Call("PUT", path("schedules", job_id), as_is, body=body, repeatable=True))

    def get_schedule(self, job_id: str):
        return self._run(Call("GET", path("schedules", job_id), as_is, repeatable=True))

    def list_schedules(self):
        """→ a list of schedule dicts."""
        return self._run(Call("GET", path("schedules"), items, repeatable=True))

    def delete_schedule(self, job_id: str):
        return self._run(Call("DELETE", path("schedules", job_id), as_is, repeatable=True))

    def trigger(self, job_id: str):
        """Fire the schedule now, once → the new Execution."""
        return self._run(Call("POST", path("schedules", job_id, "trigger"), Execution.from_json))

    def preview(self, job_id: str, count: int = 10):
        """→ the next `count` fire instants (aware datetimes, UTC)."""
        return self._run(Call("GET", path("schedules", job_id, "preview"), _instants, params={"count": count},
                              repeatable=True))

    # --- queues, nodes, API keys -----------------------------------------------------------

    def queues(self):
        """→ a list of queue dicts: `{name, paused, counts, oldest_claimable_age_seconds}`."""
        return self._run(Call("GET", path("queues"), items, repeatable=True))

    def pause(self, queue: str):
        """Stop claiming from `queue` (enqueue still works) → the queue's dict."""
        return self._run(Call("POST", path("queues", queue, "pause"), as_is, repeatable=True))

    def resume(self, queue: str):
        return self._run(Call("POST", path("queues", queue, "resume"), as_is, repeatable=True))

    def nodes(self):
        """→ a list of live nodes: `{server_id, started_at, last_heartbeat, in_flight}`."""
        return self._run(Call("GET", path("nodes"), items, repeatable=True))

    def create_api_key(self, name: str, scopes: Iterable[str], queues: Iterable[str] | None = None):
        """→ `{id, name, scopes, queues, …, key}`; the key is shown this once."""
        body = {"name": name, "scopes": [*scopes], "queues": None if queues is None else [*queues]}
        return self._run(Call("POST", path("api-keys"), as_is, body=body))

    def list_api_keys(self):
        return self._run(Call("GET", path("api-keys"), items, repeatable=True))

    def delete_api_key(self, key_id: Id):
        return self._run(Call("DELETE", path("api-keys", key_id), as_is, repeatable=True))


def _instants(body: Any) -> list[Any]:
    return [parse_time(instant) for instant in body["items"]]
