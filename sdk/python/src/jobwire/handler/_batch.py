"""BatchHandlerApp: the batch form of a handler (a handler registered with `batch`).

Jobwire sends a batching handler's due jobs together, one signed POST of
`{"executions": [<dispatch>…]}`, and reads `{"outcomes": [{execution_id, outcome, result?,
error?, retryable?}]}` back. Here `handle_batch(jobs)` gets the jobs and returns one entry per
job, in order: a result (JSON), or an exception, the job's failure (`Permanent`: no retry). The
signature and replay checks, and the way a failure is written, are the single form's. A single
dispatch (a node that does not batch) is answered in the single form, as one job's batch.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import time
from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import Any

from jobwire.handler._asgi import Receive, Scope, Send, _json, _read_body, _respond
from jobwire.handler._callbacks import encode
from jobwire.handler._errors import Permanent
from jobwire.handler._job import Job, NotADispatch, parse_job
from jobwire.handler._outcome import Outcome, failure, problem, sync_reply
from jobwire.handler._replay import ReplayGuard
from jobwire.handler._signature import BadSignature, secret_keys, verify

log = logging.getLogger("jobwire.handler")

HandleBatch = Callable[[list[Job]], Awaitable[Sequence[Any]] | Sequence[Any]]


class BatchHandlerApp:
    """An ASGI app serving one batching handler on every path: POST a batch (or a single
    dispatch), anything else 405. The answer is synchronous: `handle_batch` runs within the
    request, and must return before the jobs' deadline (the soonest of them)."""

    def __init__(self, handle_batch: HandleBatch, secret: str | Iterable[str]) -> None:
        self._handle = handle_batch
        self._keys = secret_keys(secret)
        self._replays = ReplayGuard()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            await self._http(scope, receive, send)
        elif scope["type"] == "lifespan":
            while (message := await receive())["type"] != "lifespan.shutdown":
                if message["type"] == "lifespan.startup":
                    await send({"type": "lifespan.startup.complete"})
            await send({"type": "lifespan.shutdown.complete"})
        elif scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1003})

    async def _http(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["method"] != "POST":
            await _respond(send, 405, problem(405, "Method not allowed", "a handler takes POST only"),
                           [(b"allow", b"POST")])
            return
        body = await _read_body(receive)
        if body is None:
            await _respond(send, 413, problem(413, "Too large", "the body is over the toolkit's cap"))
            return
        headers = {name.decode("latin-1").lower(): value.decode("latin-1") for name, value in scope["headers"]}
        now = time.time()
        try:
            signed = verify(self._keys, headers, body, now)
            if not self._replays.first_time(signed, now):
                raise BadSignature("a replay: this webhook-id, webhook-timestamp and body were already received")
            document = _json(body)
            batch = isinstance(document, dict) and "executions" in document
            jobs = parse_batch(document) if batch else [parse_job(document)]
        except BadSignature as exc:
            await _respond(send, 401, problem(401, "Bad signature", str(exc)))
            return
        except NotADispatch as exc:
            await _respond(send, 400, problem(400, "Not a Jobwire dispatch", str(exc)))
            return
        outcomes = await run_batch(self._handle, jobs)
        if batch:
            await _respond(send, 200, outcomes_body(jobs, outcomes))
        else:
            status, reply = sync_reply(outcomes[0])
            await _respond(send, status, reply)


def parse_batch(document: Any) -> list[Job]:
    """The jobs of a batch dispatch, `{"executions": [<dispatch>…]}`."""
    executions = document.get("executions")
    if not isinstance(executions, list) or not executions:
        raise NotADispatch("executions is not a non-empty list")
    return [parse_job(one) for one in executions]


async def run_batch(handle_batch: HandleBatch, jobs: list[Job]) -> list[Outcome]:
    """The outcome of each job: what `handle_batch` returned for it, or, when it raised or
    returned a list of another length, its failure for every job."""
    try:
        returned = handle_batch(list(jobs))
        if inspect.isawaitable(returned):
            returned = await returned
        entries = list(returned)
    except asyncio.CancelledError:
        raise
    except Exception as exc:
        log.error("a batch of %d executions (%s first) failed", len(jobs), jobs[0].execution_id, exc_info=exc)
        return [_failure(exc)] * len(jobs)
    if len(entries) != len(jobs):
        wrong = ValueError(f"handle_batch returned {len(entries)} outcomes for {len(jobs)} jobs")
        log.error("%s", wrong)
        return [failure(wrong)] * len(jobs)
    return [_entry(entry) for entry in entries]


def _entry(entry: Any) -> Outcome:
    if isinstance(entry, BaseException):
        return _failure(entry)
    try:
        return Outcome(True, result_json=encode(entry))
    except (TypeError, ValueError) as encoding:
        return Outcome(False, message=f"the result is not JSON: {encoding}", error_type="UnencodableResult")


def _failure(exc: BaseException) -> Outcome:
    if isinstance(exc, Permanent):
        return failure(exc, retryable=False, error_type=exc.error_type)
    return failure(exc)


def outcomes_body(jobs: Sequence[Job], outcomes: Sequence[Outcome]) -> bytes:
    """`{"outcomes": [...]}`, one entry per job: a failure carries `error: {type, message}` and
    `retryable` as the single form's failing reply does."""
    entries = []
    for job, outcome in zip(jobs, outcomes, strict=True):
        head = encode(job.execution_id)
        if outcome.succeeded:
            entries.append(b'{"execution_id":' + head + b',"outcome":"succeeded","result":' + outcome.result_json
                           + b"}")
        else:
            entries.append(encode({"execution_id": job.execution_id, "outcome": "failed",
                                   "error": {"type": outcome.error_type, "message": outcome.message},
                                   "retryable": outcome.retryable}))
    return b'{"outcomes":[' + b",".join(entries) + b"]}"
