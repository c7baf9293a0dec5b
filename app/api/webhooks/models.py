"""The dispatch request Jobwire sends to a handler (DESIGN §5, app/delivery/dispatch.py) and the
reply it reads back."""

from __future__ import annotations

from datetime import datetime
from typing import Any
from uuid import UUID

from pydantic import BaseModel, ConfigDict, Field

from app.api.executions.models import JobTypeName


class DispatchCallback(BaseModel):
    model_config = ConfigDict(extra="forbid")

    url: str = Field(description="`<JOBWIRE_PUBLIC_URL>/v1/executions/<execution_id>`: the callback routes are "
                                 "under it (`/complete`, `/progress`, `/heartbeat`, `/logs`, `/steps/{name}`)")
    token: str = Field(description="`Authorization: Bearer <token>` on those callbacks: valid for this execution "
                                   "and attempt only")


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


class HandlerReply(BaseModel):
    """What Jobwire reads from a 2xx reply other than 202; other members are ignored, and a body
    that is not JSON (or none) succeeds without a result."""

    result: Any = Field(None, description="stored as the execution's `result` (null when absent); over the payload "
                                          "cap, or not storable in PostgreSQL, the attempt fails instead")
