"""One attempt's HTTP call: the signed request of DESIGN §5 and its reply as an Outcome."""

from __future__ import annotations

import asyncio
import importlib.metadata
import logging
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any

import orjson

from app.domain.dispatch import ClaimedJob, Outcome, OutcomeKind
from app.domain.executions import ErrorType
from app.domain.failure_reply import ReportedFailure, reported_failure
from app.domain.handler_secrets import UnreadableSecret
from app.domain.jsonsafety import UnstorableJson, check_storable
from app.domain.jsontext import loads
from app.domain.retry import parse_retry_after
from app.domain.signing import sign_webhook, webhook_id
from app.domain.text import error_text
from app.domain.waits import InvalidSuspend, parse_suspend
from app.delivery.secret_cipher import PLAIN, SecretCipher
from app.delivery.transport import BlockedDestination, DeadlineExceeded, Reply, Transport, TransportError


log = logging.getLogger(__name__)


def _version() -> str:
    try:
        return importlib.metadata.version("jobwire")
    except importlib.metadata.PackageNotFoundError:  # run from a checkout that was never installed
        import app

        return getattr(app, "__version__", "0")


VERSION = _version()
USER_AGENT = f"Jobwire/{VERSION}"


def request_body(job: ClaimedJob, callback_url: str, token: str) -> bytes:
    # Times as RFC 3339 in UTC with a Z, written by orjson itself (the driver hands them over
    # in UTC); payload, parameters and metadata as stored (orjson fragments of their JSON); a
    # workflow job's `workflow` (its ref and parents) as the claim built it.
    body: dict[str, Any] = {
        "execution_id": str(job.id),
        "job_id": job.job_id,
        "job_type": job.job_type,
        "queue": job.queue,
        "attempt": job.attempt,
        "max_attempts": job.max_attempts,
        "payload": job.payload,
        "parameters": job.parameters,
        "metadata": job.metadata,
        "scheduled_at": _utc(job.scheduled_at),
        "started_at": _utc(job.started_at),
        "deadline": _utc(job.deadline_at),
        "callback": {"url": callback_url, "token": token},
    }
    if job.workflow is not None:
        body["workflow"] = job.workflow
    if job.continuation is not None:  # a job that suspended: its steps, and `resume` when resumed
        body.update(job.continuation)
    return orjson.dumps(body, option=orjson.OPT_UTC_Z)


def _utc(value: datetime | None) -> datetime | None:
    if value is None or value.tzinfo is UTC:
        return value
    return value.astimezone(UTC)


def signed_headers(secrets: str | Sequence[str], job: ClaimedJob, body: bytes,
                   now: float | None = None) -> dict[str, str]:
    """DESIGN §5's headers. `webhook-id` is the execution id on every attempt (handlers dedupe on
    it), the attempt is `jobwire-attempt`; `webhook-signature` holds one `v1,<sig>` per secret
    (`whsec_…`, newest first), space-separated, so a handler verifies with any one of them."""
    resumption = job.resumption
    headers = _signed(secrets, webhook_id(job.id, resumption), body, now)
    headers["jobwire-attempt"] = str(job.attempt)
    if resumption is not None:
        headers["jobwire-resume"] = str(resumption)
    return headers


def _signed(secrets: str | Sequence[str], msg_id: str, body: bytes, now: float | None = None) -> dict[str, str]:
    timestamp = int(now if now is not None else time.time())
    return {
        "content-type": "application/json",
        "user-agent": USER_AGENT,
        "webhook-id": msg_id,
        "webhook-timestamp": str(timestamp),
        "webhook-signature": sign_webhook(secrets, msg_id, timestamp, body),
    }


def batch_request_body(bodies: Sequence[bytes]) -> bytes:
    """The batch form's body, `{"executions": [...]}`: each job's own request_body as it is."""
    return b'{"executions":[' + b",".join(bodies) + b"]}"


def batch_headers(secrets: str | Sequence[str], jobs: Sequence[ClaimedJob], body: bytes,
                  now: float | None = None) -> dict[str, str]:
    """The batch form's headers: signed once for the whole body, `webhook-id` the first
    execution's id and the count (`<id>+<n>`). Attempts (and resumptions) are in each body."""
    return _signed(secrets, f"{jobs[0].id}+{len(jobs)}", body, now)


def classify(reply: Reply, retry_max_delay: float) -> Outcome:
    """2xx except 202 → SUCCEEDED with {"result"}; 202 → ACCEPTED; anything else → FAILED, with
    the error its JSON body reports (`{"error": {"type", "message"}, "retryable"?}`), or else its
    status line and the start of its body. Each outcome carries the reply's status (a 202's only
    in memory: the callback that ends its attempt later records none)."""
    if reply.too_large:
        return Outcome(OutcomeKind.FAILED, error=f"HTTP {reply.status}: response body over the size cap",
                       error_type=ErrorType.RESPONSE_TOO_LARGE, http_status=reply.status)
    if reply.status == 202:
        return Outcome(OutcomeKind.ACCEPTED, http_status=202)
    if 200 <= reply.status < 300:
        return _success(reply)
    retry_after = None
    if reply.status in (429, 503):
        retry_after = parse_retry_after(reply.headers.get("retry-after") or reply.headers.get("Retry-After"),
                                        _reply_time(reply), retry_max_delay)
    reported = _reported_failure(reply.body)
    if reported is not None:
        return Outcome(
            OutcomeKind.FAILED,
            error=error_text(reported.message or f"HTTP {reply.status} {reply.reason}".rstrip()),
            error_type=reported.error_type or ErrorType.HTTP_STATUS,
            retryable=reported.retryable,
            retry_after=retry_after,
            http_status=reply.status,
        )
    detail = reply.body[:2000].decode("utf-8", "replace")
    return Outcome(
        OutcomeKind.FAILED,
        error=error_text(f"HTTP {reply.status} {reply.reason}: {detail}".rstrip(": ")),
        error_type=ErrorType.HTTP_STATUS,
        retry_after=retry_after,
        http_status=reply.status,
    )


def _reported_failure(body: bytes) -> ReportedFailure | None:
    if not body.strip():
        return None
    try:
        document: Any = loads(body)
    except orjson.JSONDecodeError:
        return None
    return reported_failure(document)


def _success(reply: Reply) -> Outcome:
    status = reply.status
    if not reply.body.strip():
        return Outcome(OutcomeKind.SUCCEEDED, http_status=status)
    try:
        document: Any = loads(reply.body)
    except orjson.JSONDecodeError:
        return Outcome(OutcomeKind.SUCCEEDED, http_status=status)  # a non-JSON body carries no result
    if isinstance(document, dict) and document.get("suspend") is not None:
        try:
            spec = parse_suspend(document["suspend"], datetime.now(UTC))
        except InvalidSuspend as exc:
            return Outcome(OutcomeKind.FAILED, error=str(exc), error_type=ErrorType.HANDLER_FAILED,
                           http_status=status)
        return Outcome(OutcomeKind.SUSPENDED, suspend=spec, http_status=status)
    return _succeeded(document.get("result") if isinstance(document, dict) else None, status)


def _succeeded(result: Any, status: int) -> Outcome:
    """A success with `result`, or a failure when the result cannot be stored."""
    try:
        check_storable(result, "result")
    except UnstorableJson as exc:
        return Outcome(OutcomeKind.FAILED, error=f"the reply's result cannot be stored: {exc.path}: {exc.message}",
                       error_type=ErrorType.HANDLER_FAILED, http_status=status)
    return Outcome(OutcomeKind.SUCCEEDED, result=result, http_status=status)


def _reply_time(reply: Reply) -> datetime:
    # Judge an HTTP-date Retry-After against the handler's own Date header when it sent a usable
    # one: an HTTP date is ASCII ('٢٠٢٦' is no year), and a 20-digit year is an OverflowError.
    date = reply.headers.get("date") or reply.headers.get("Date")
    if date and date.isascii():
        try:
            parsed = parsedate_to_datetime(date)
            if parsed.tzinfo is not None:
                return parsed
        except (TypeError, ValueError, IndexError, OverflowError):
            pass
    return datetime.now(UTC)


# Asked again after this long when the database could not say whether the deadline moved.
PROBE_RETRY = 1.0

DeadlineProbe = Callable[[], Awaitable[float | None]]


async def call_handler(
    transport: Transport,
    job: ClaimedJob,
    callback_url: str,
    token: str,
    retry_max_delay: float,
    seconds_left: DeadlineProbe | None = None,
    cipher: SecretCipher = PLAIN,
    trace_headers: Mapping[str, str] | None = None,
) -> Outcome:
    """One attempt's call. Its deadline is the claim's, unless `seconds_left` (the database's
    view of the attempt's deadline, which heartbeat and progress callbacks move) says it moved:
    then the call goes on until the moved one (capped by max_duration_seconds in the database).
    `cipher` reads the handler's stored secrets (its cache keeps decrypting off this path).
    `trace_headers`: the call's trace context (`traceparent`, app/delivery/telemetry.py), sent
    beside the signed headers (the signature covers the body only)."""
    secrets = _secrets(job, cipher)
    if isinstance(secrets, Outcome):
        return secrets
    body = request_body(job, callback_url, token)
    headers = signed_headers(secrets, job, body)
    if trace_headers:
        headers.update(trace_headers)
    reply = await _post(transport, job.handler_url or "", body, headers, job.seconds_left, seconds_left)
    return reply if isinstance(reply, Outcome) else classify(reply, retry_max_delay)


async def call_handler_batch(
    transport: Transport,
    jobs: Sequence[ClaimedJob],
    callbacks: Sequence[tuple[str, str]],
    retry_max_delay: float,
    seconds_left: DeadlineProbe | None = None,
    cipher: SecretCipher = PLAIN,
    trace_headers: Mapping[str, str] | None = None,
) -> list[Outcome]:
    """One call for several jobs of one handler (its batch form, DESIGN §9): the outcome of each
    job, in the order of `jobs`. `callbacks`: each job's (callback url, token), parallel to `jobs`.
    The call's deadline is the soonest of the jobs'; `seconds_left` says how long the soonest of
    those still running has now (heartbeats move them), as for one job's call. A reply that is
    not a 2xx with outcomes (a failing status, a connection error, the deadline) is the outcome
    of every job; a 202 hands each of them to its callbacks."""
    secrets = _secrets(jobs[0], cipher)
    if isinstance(secrets, Outcome):
        return _each(secrets, len(jobs))
    body = batch_request_body([request_body(job, url, token) for job, (url, token) in zip(jobs, callbacks,
                                                                                          strict=True)])
    headers = batch_headers(secrets, jobs, body)
    if trace_headers:
        headers.update(trace_headers)
    reply = await _post(transport, jobs[0].handler_url or "", body, headers, min(j.seconds_left for j in jobs),
                        seconds_left)
    if isinstance(reply, Outcome):
        return _each(reply, len(jobs))
    return classify_batch(reply, jobs, retry_max_delay)


def _each(outcome: Outcome, n: int) -> list[Outcome]:
    """One reply for every job of a batch call: one shared object (Outcome.shared)."""
    shared = replace(outcome, shared=True)
    return [shared] * n


def _secrets(job: ClaimedJob, cipher: SecretCipher) -> list[str] | Outcome:
    """The handler's signing secrets in plain text, or the failed outcome of a call that cannot be made."""
    stored = job.handler_secrets or ((job.handler_secret,) if job.handler_secret else ())
    if not job.handler_url or not stored:
        return Outcome(OutcomeKind.FAILED, error=f"handler {job.handler!r} is not registered",
                       error_type=ErrorType.HANDLER_FAILED, retryable=False)
    try:
        return [cipher.reveal(s) for s in stored]
    except UnreadableSecret as exc:
        # A node without the key (or with another one) beside nodes that have it: retryable, so
        # another node, or this one once its key is set right, makes the next attempt.
        log.error("execution %s not dispatched to handler %r: %s", job.id, job.handler, exc)
        return Outcome(OutcomeKind.FAILED, error=str(exc), error_type=ErrorType.HANDLER_FAILED)


async def _post(transport: Transport, url: str, body: bytes, headers: dict[str, str], left: float,
                probe: DeadlineProbe | None) -> Reply | Outcome:
    """The reply, or the outcome of a call that got none (the deadline, a refused destination, a
    connection error)."""
    try:
        return await _within_deadline(transport.post(url, body, headers, None), left, probe)
    except DeadlineExceeded as exc:
        return Outcome(OutcomeKind.ABANDONED, error=str(exc), error_type=ErrorType.ABANDONED_DEADLINE)
    except BlockedDestination as exc:  # nothing was sent; no retry can reach it: dead-letters at once
        return Outcome(OutcomeKind.FAILED, error=error_text(str(exc)), error_type=ErrorType.BLOCKED_DESTINATION,
                       retryable=False)
    except TransportError as exc:
        return Outcome(OutcomeKind.FAILED, error=error_text(str(exc)), error_type=ErrorType.CONNECTION)


def classify_batch(reply: Reply, jobs: Sequence[ClaimedJob], retry_max_delay: float) -> list[Outcome]:
    """A batch call's reply as the outcome of each job (in the order of `jobs`): a 2xx (not 202)
    with `{"outcomes": [{execution_id, outcome, result?, error?, retryable?}]}` decides per job,
    a job it leaves out failed; anything else is classified as one job's reply would be, for all
    of them (a 202 hands each to its callbacks). Outcomes of executions not in the call, and
    repeats, are ignored."""
    status = reply.status
    if reply.too_large or status == 202 or not 200 <= status < 300:
        return _each(classify(reply, retry_max_delay), len(jobs))
    document: Any = None
    if reply.body.strip():
        try:
            document = loads(reply.body)
        except orjson.JSONDecodeError:
            pass
    listed = document.get("outcomes") if isinstance(document, dict) else None
    if not isinstance(listed, list):
        return _each(Outcome(OutcomeKind.FAILED, error=f"HTTP {status}: the batch reply has no \"outcomes\" list",
                             error_type=ErrorType.HANDLER_FAILED, http_status=status), len(jobs))
    wanted = {str(job.id) for job in jobs}
    found: dict[str, Outcome] = {}
    for item in listed:
        execution_id = item.get("execution_id") if isinstance(item, dict) else None
        if isinstance(execution_id, str) and execution_id in wanted and execution_id not in found:
            found[execution_id] = _batch_outcome(item, status)
    missing = Outcome(OutcomeKind.FAILED, error=f"HTTP {status}: the batch reply has no outcome for this execution",
                      error_type=ErrorType.HANDLER_FAILED, http_status=status)
    return [found.get(str(job.id), missing) for job in jobs]


def _batch_outcome(item: dict[str, Any], status: int) -> Outcome:
    """One job's entry of a batch reply: `succeeded` with its `result` (as a single reply's
    `{"result"}`), or `failed` with its `error` ({type, message}, as a failing reply's body, or a
    string) and `retryable` (default true)."""
    outcome = item.get("outcome")
    if outcome == "succeeded":
        return _succeeded(item.get("result"), status)
    if outcome != "failed":
        return Outcome(OutcomeKind.FAILED, error=error_text(f"unknown outcome {str(outcome)[:100]!r} in the batch "
                                                            "reply (succeeded or failed)"),
                       error_type=ErrorType.HANDLER_FAILED, http_status=status)
    reported = reported_failure(item)
    if reported is not None:
        return Outcome(OutcomeKind.FAILED, error=error_text(reported.message or "failed"),
                       error_type=reported.error_type or ErrorType.HANDLER_FAILED, retryable=reported.retryable,
                       http_status=status)
    error, retryable = item.get("error"), item.get("retryable", True)
    return Outcome(OutcomeKind.FAILED, error=error_text(error if isinstance(error, str) and error else "failed"),
                   error_type=ErrorType.HANDLER_FAILED, retryable=retryable if isinstance(retryable, bool) else True,
                   http_status=status)


async def _within_deadline(post: Awaitable[Reply], left: float, probe: DeadlineProbe | None) -> Reply:
    """The reply of `post`, if it comes before the attempt's deadline. When the deadline comes
    first, ask `probe` for the seconds left now, and keep waiting while heartbeats moved it;
    else the call is cancelled (its connection dropped) and DeadlineExceeded raised.

    One timer per call, as a plain timeout would cost; the probe runs only when it fires."""
    loop = asyncio.get_running_loop()
    began = loop.time()
    timeout = asyncio.timeout_at(began + max(left, 0.001) if probe is None else None)
    timer: asyncio.TimerHandle | None = None
    rechecking: asyncio.Task[None] | None = None

    def deadline_came() -> None:
        nonlocal rechecking
        rechecking = loop.create_task(recheck())

    async def recheck() -> None:
        nonlocal timer
        try:
            moved = await probe()  # type: ignore[misc]
        except Exception:  # the database is away: the call goes on, ask again shortly
            moved = PROBE_RETRY
        if moved is None or moved <= 0:
            timeout.reschedule(loop.time())  # give up now: the call is cancelled
        else:
            timer = loop.call_later(moved, deadline_came)

    if probe is not None:
        timer = loop.call_later(max(left, 0.001), deadline_came)
    try:
        async with timeout:
            return await post
    except TimeoutError as exc:
        raise DeadlineExceeded(f"no reply by the attempt's deadline ({loop.time() - began:.3f}s after the "
                               "call began)") from exc
    finally:
        if timer is not None:
            timer.cancel()
        if rechecking is not None and not rechecking.done():
            rechecking.cancel()
