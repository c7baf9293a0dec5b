"""The `webhooks` section of the document: the request Jobwire sends to a handler for each attempt
and the replies it understands. Declared as FastAPI declares a route, on app.webhooks, never
served: the dispatcher sends it (app/delivery/dispatch.py)."""

from __future__ import annotations

from typing import Annotated
from uuid import UUID

from fastapi import APIRouter, Header
from starlette.responses import Response

from app.api.executions.models import EventOut
from app.api.webhooks.models import BatchDispatchRequest, BatchReply, DispatchRequest, HandlerFailure, HandlerReply

router = APIRouter()

RETRY_AFTER = {"Retry-After": {"description": "seconds, or an HTTP date: the next attempt waits that long (capped "
                                              "by JOBWIRE_RETRY_MAX_DELAY) instead of the backoff",
                               "schema": {"type": "string"}}}


@router.post(
    "jobDispatch", operation_id="dispatchJob", summary="Dispatch an attempt to its handler", tags=["dispatch"],
    status_code=200, response_model=HandlerReply,
    response_description="done: the attempt SUCCEEDED (any 2xx but 202), with `result` from a JSON body",
    responses={
        202: {"description": "accepted: the handler now holds the execution and reports its outcome through the "
                             "callbacks (`POST {callback.url}/complete`) before `deadline`, sending heartbeats or "
                             "progress to move it; else the attempt is ABANDONED"},
        429: {"description": "the attempt FAILED, as a 4xx; retried after `Retry-After` when it is sent",
              "headers": RETRY_AFTER, "model": HandlerFailure},
        503: {"description": "the attempt FAILED, as a 4xx; retried after `Retry-After` when it is sent",
              "headers": RETRY_AFTER, "model": HandlerFailure},
        "4XX": {"description": "the attempt FAILED: retried after the backoff while attempts remain, else DEAD_LETTER. "
                               "A JSON body `{\"error\": {\"type\", \"message\"}, \"retryable\"?}` is the "
                               "attempt's error (`retryable: false`: DEAD_LETTER at once); any other body is stored "
                               "as the status line and the body's start, error_type `http_status`",
                "model": HandlerFailure},
        "5XX": {"description": "the attempt FAILED, as a 4xx; so does a connection error or a redirect (never "
                               "followed)", "model": HandlerFailure},
    },
)
async def dispatch_job(
    body: DispatchRequest,
    webhook_id: Annotated[UUID, Header(alias="webhook-id", description=(
        "the execution id, the same on every attempt: dedupe on it (Standard Webhooks `webhook-id`)"))],
    webhook_timestamp: Annotated[int, Header(alias="webhook-timestamp", description=(
        "Unix seconds when it was signed: refuse one far from now (replay)"))],
    webhook_signature: Annotated[str, Header(alias="webhook-signature", description=(
        "`v1,<base64 HMAC-SHA256(key, \"<webhook-id>.<webhook-timestamp>.<body>\")>`, one per active signing "
        "secret of the handler (newest first), space-separated; `key` is the secret after `whsec_`, "
        "base64-decoded. Verify with any Standard Webhooks library"))],
    jobwire_attempt: Annotated[int, Header(alias="jobwire-attempt", description=(
        "the attempt, zero-based (as `attempt`)"))],
    user_agent: Annotated[str, Header(alias="User-Agent", description="`Jobwire/<version>`")],
) -> None:
    """Each attempt of an execution is one signed POST to its handler's URL (redirects are not
    followed), with the execution and a callback URL and token. The reply decides the attempt:
    a 2xx (not 202) succeeds, with `result` stored from a JSON body `{"result": …}`; a 202
    hands the execution to the handler, which reports through the callbacks; anything else, or
    no reply before `deadline`, fails or abandons the attempt (retried while attempts remain).
    A failing reply names its error as the `complete` callback does, with a JSON body
    `{"error": {"type", "message"}, "retryable"?}`."""


@router.post(
    "jobBatchDispatch", operation_id="dispatchJobs", summary="Dispatch several attempts to a batching handler",
    tags=["dispatch"], status_code=200, response_model=BatchReply,
    response_description="each job's outcome: `succeeded` with its `result`, or `failed` with its `error`; a job "
                         "left out failed its attempt",
    responses={
        202: {"description": "accepted: the handler now holds every job of the call, each reporting through its own "
                             "callbacks before its own deadline"},
        429: {"description": "every job of the call FAILED (an adaptive handler's: put back ENQUEUED, the same "
                             "attempt); retried after `Retry-After` when it is sent",
              "headers": RETRY_AFTER, "model": HandlerFailure},
        "4XX": {"description": "every job of the call FAILED, with the error a single job's failing reply would "
                               "record", "model": HandlerFailure},
        "5XX": {"description": "as a 4xx; so does a connection error or a redirect (never followed)",
                "model": HandlerFailure},
    },
)
async def dispatch_jobs(
    body: BatchDispatchRequest,
    webhook_id: Annotated[str, Header(alias="webhook-id", description=(
        "`<first execution id>+<count>`: the call's message id"))],
    webhook_timestamp: Annotated[int, Header(alias="webhook-timestamp", description=(
        "Unix seconds when it was signed: refuse one far from now (replay)"))],
    webhook_signature: Annotated[str, Header(alias="webhook-signature", description=(
        "as for a single dispatch, over the whole body: one `v1,<sig>` per active signing secret"))],
    user_agent: Annotated[str, Header(alias="User-Agent", description="`Jobwire/<version>`")],
) -> None:
    """A handler registered with `batch` gets up to `batch.max_size` of its due jobs in one signed
    POST; each job keeps its own attempt, deadline, retries and callbacks. The call's deadline is
    the soonest of its jobs'. A reply to the whole call (a failing status, no connection, the
    deadline, a 202) applies to every job of it."""


@router.post(
    "eventDelivery", operation_id="deliverEvent", summary="Deliver an event to a subscriber", tags=["event-delivery"],
    status_code=200, response_class=Response,
    response_description="any 2xx acknowledges the event: it is not sent again (unless resent); the body is ignored",
    responses={
        "4XX": {"description": "not acknowledged: tried again after 1 s, doubling to 10 minutes, until "
                               "JOBWIRE_EVENT_RETRY_SECONDS after it was written; then the delivery is dead"},
        "5XX": {"description": "as a 4xx; so are a redirect (never followed), a timeout (10 s) and a connection "
                               "error. While a subscription fails, one delivery at a time probes it"},
    },
)
async def deliver_event(
    body: EventOut,
    webhook_id: Annotated[str, Header(alias="webhook-id", description=(
        "the event's id, the same on every try (and to every subscriber): dedupe on it"))],
    webhook_timestamp: Annotated[int, Header(alias="webhook-timestamp", description=(
        "Unix seconds when it was signed: refuse one far from now (replay)"))],
    webhook_signature: Annotated[str, Header(alias="webhook-signature", description=(
        "`v1,<base64 HMAC-SHA256(key, \"<webhook-id>.<webhook-timestamp>.<body>\")>`, one per active signing "
        "secret of the subscription (newest first), space-separated. Verify with any Standard Webhooks library"))],
    jobwire_subscription: Annotated[str, Header(alias="jobwire-subscription", description="the subscription's name")],
    jobwire_event_type: Annotated[str, Header(alias="jobwire-event-type", description="the event's `type`")],
    user_agent: Annotated[str, Header(alias="User-Agent", description="`Jobwire/<version>`")],
) -> None:
    """Each event a subscription wants is one signed POST of the item `GET /v1/events` lists
    (`{id, type, occurred_at, data}`: the curated event, no payload, result or error text) to its
    URL, at least once. Types: `execution.succeeded`, `execution.failed` (an attempt failed),
    `execution.abandoned`, `execution.dead_lettered`, `execution.cancelled`, `execution.retried` (a
    manual retry). Per execution, events arrive in the order they committed: a later one waits
    until the earlier one is acknowledged or dead; events of different executions may arrive in
    any order. The answer's body is read up to 64 KiB and ignored."""
