"""The `webhooks` section of the document: the request Jobwire sends to a handler for each attempt
and the replies it understands. Declared as FastAPI declares a route, on app.webhooks, never
served: the dispatcher sends it (app/delivery/dispatch.py)."""

from __future__ import annotations

from typing import Annotated
from uuid import UUID

from fastapi import APIRouter, Header

from app.api.webhooks.models import DispatchRequest, HandlerFailure, HandlerReply

router = APIRouter(tags=["dispatch"])

RETRY_AFTER = {"Retry-After": {"description": "seconds, or an HTTP date: the next attempt waits that long (capped "
                                              "by JOBWIRE_RETRY_MAX_DELAY) instead of the backoff",
                               "schema": {"type": "string"}}}


@router.post(
    "jobDispatch", operation_id="dispatchJob", summary="Dispatch an attempt to its handler",
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
