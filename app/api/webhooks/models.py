"""The dispatch request Jobwire sends to a handler (DESIGN §5, app/delivery/dispatch.py) and the
reply it reads back."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal
from uuid import UUID

from pydantic import BaseModel, ConfigDict, Field

from app.api.executions.models import JobTypeName


class DispatchCallback(BaseModel):
    model_config = ConfigDict(extra="forbid")

    url: str = Field(description="`<JOBWIRE_PUBLIC_URL>/v1/executions/<execution_id>`: the callback routes are "
                                 "under it (`/complete`, `/progress`, `/heartbeat`, `/logs`, `/steps/{name}`)")
    token: str = Field(description="`Authorization: Bearer <token>` on those callbacks: valid for this execution "
                                   "and attempt only")


class DispatchParent(BaseModel):
    model_config = ConfigDict(extra="forbid")

    execution_id: UUID
    state: str = Field(description="its state now: SUCCEEDED, DEAD_LETTER or CANCELLED (terminal), as the job "
                                   "runs only once every parent is terminal")
    result: Any = Field(None, description="its result, while the parents' results total at most 256 KiB as JSON; "
                                          "beyond that left out of every parent: GET {callback.url}/parents pages "
                                          "through them")


class DispatchWorkflow(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: UUID = Field(description="the workflow (GET /v1/workflows/{id})")
    ref: str = Field(description="this job's ref in it")
    parents: dict[str, DispatchParent] = Field(description="its direct parents by ref; empty for a root")


class DispatchSignal(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str
    payload: Any = Field(description="as sent (POST /v1/executions/{id}/signals/{name})")
    sent_at: datetime


class DispatchResume(BaseModel):
    model_config = ConfigDict(extra="forbid")

    n: int = Field(description="which resumption this is, 1 for the first; also the `jobwire-resume` header and "
                               "the `.r<n>` of `webhook-id`")
    reason: Literal["timer", "signal", "children", "timeout"]
    signals: list[DispatchSignal] = Field(description="the signals this resumption consumed (reason `signal`)")
    children: dict[str, Any] = Field(description="a wait on its spawned children (`children: \"all\"`): each by the "
                                                 "ref it gave, {execution_id, state, result}, the results inlined "
                                                 "while they total at most 256 KiB (else left out: GET "
                                                 "{callback.url}/children); empty for other waits")


class DispatchRequest(BaseModel):
    """The body of one attempt's POST to the handler: exactly these fields, every time in UTC.
    tests/unit/test_openapi_webhooks.py checks what request_body writes against this model."""

    model_config = ConfigDict(extra="forbid")

    execution_id: UUID = Field(description="the execution: also the `webhook-id` header, the same on every attempt")
    job_id: str
    job_type: JobTypeName
    queue: str
    attempt: int = Field(description="zero-based; also the `jobwire-attempt` header")
    max_attempts: int
    payload: Any = Field(description="the job's payload, as enqueued (any JSON value)")
    parameters: Any = Field(description="the job's parameters: a JSON object, or null")
    metadata: Any = Field(description="the job's metadata: a JSON object, or null")
    scheduled_at: datetime
    started_at: datetime = Field(description="when this attempt was claimed")
    deadline: datetime = Field(description="reply, or report back by callbacks, before this: a call still open then "
                                           "is abandoned (heartbeat and progress callbacks move it)")
    callback: DispatchCallback
    workflow: DispatchWorkflow | None = Field(None, description="only for a job of a workflow (absent otherwise): "
                                                                 "its ref and its parents with their results")
    resume: DispatchResume | None = Field(None, description="only on a resumed dispatch (after a `suspend`): why "
                                                             "it resumed and the signals it consumed")
    steps: dict[str, Any] | None = Field(None, description="only for a job that suspended: every step recorded "
                                                           "(name → result), so a stateless handler replays to "
                                                           "where it was")


class HandlerReply(BaseModel):
    """What Jobwire reads from a 2xx reply other than 202; other members are ignored, and a body
    that is not JSON (or none) succeeds without a result."""

    result: Any = Field(None, description="stored as the execution's `result` (null when absent); over the payload "
                                          "cap, or not storable in PostgreSQL, the attempt fails instead")
    suspend: dict[str, Any] | None = Field(
        None, description="instead of a result: wait, holding no slot, then be dispatched again with `resume` — "
                          "`{until?: RFC 3339 | seconds?: n, signals?: [name], timeout_seconds?: n, steps?: {name: "
                          "result}}` (until at most 365 days ahead; at most 100 suspensions per execution)")


class HandlerFailureError(BaseModel):
    type: str = Field(description="recorded as the attempt's `error_type`: a name (`^[A-Za-z0-9][A-Za-z0-9._:-]*$`, at "
                                  "most 100 characters) not beginning with `abandoned_` (those are Jobwire's own); "
                                  "any other value leaves `http_status`")
    message: str = Field(description="recorded as the attempt's error (`last_error`): its first 2,000 characters, "
                                     "NUL removed; empty → the status line")


class HandlerFailure(BaseModel):
    """What Jobwire reads from a failing reply (any status but 2xx), the same as a `complete`
    callback's failure: a JSON body of this shape (other members ignored, so an RFC 9457 problem
    may carry it too) names the attempt's error. Any other body, or none, is recorded as the
    status line and the start of the body, with error_type `http_status`."""

    error: HandlerFailureError
    retryable: bool = Field(True, description="false: no further attempt, the execution is DEAD_LETTER at once "
                                              "whatever attempts remain")


class BatchDispatchRequest(BaseModel):
    """The body of a batching handler's call (its `batch`): each job's own dispatch body, in claim
    order. tests/unit/test_openapi_webhooks.py checks what batch_request_body writes against it."""

    model_config = ConfigDict(extra="forbid")

    executions: list[DispatchRequest] = Field(min_length=1, max_length=500, description=(
        "up to the handler's batch.max_size jobs, each exactly as it would be sent alone (its own attempt, "
        "deadline, callback url and token)"))


class BatchOutcome(BaseModel):
    """One job's outcome in a batch reply."""

    execution_id: UUID = Field(description="a job of the call; an id not in it, or a repeat, is ignored")
    outcome: Literal["succeeded", "failed"]
    result: Any = Field(None, description="succeeded: stored as the execution's `result` (as a single reply's)")
    error: HandlerFailureError | str | None = Field(
        None, description="failed: the attempt's error, `{type, message}` as a failing reply's, or a message "
                          "(error_type `handler_failed`)")
    retryable: bool = Field(True, description="failed: false dead-letters the execution at once")


class BatchReply(BaseModel):
    """What Jobwire reads from a 2xx reply other than 202 to a batch call: each job's outcome; a
    job left out failed its attempt; no `outcomes` list fails every job of the call."""

    outcomes: list[BatchOutcome]
