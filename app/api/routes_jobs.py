"""POST /v1/jobs and /v1/jobs/batch."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Header
from starlette.responses import Response

from app.api.body import ManagementRoute
from app.api.responses import FastJSON
from app.api.schemas import BatchIn, BatchOut, ExecutionOut, JobIn, problems
from app.api.services import Services, services
from app.api.views import execution_view
from app.domain.errors import FieldError, ValidationFailed
from app.domain.names import is_valid_name
from app.domain.tracing import valid_traceparent

router = APIRouter(prefix="/v1/jobs", tags=["jobs"], route_class=ManagementRoute)
TRACEPARENT_DOC = (
    "W3C trace context (`00-<32 hex>-<16 hex>-<2 hex>`): stored as `metadata.context.traceparent` of each "
    "job unless its metadata sets one (the body wins); an invalid value is ignored. Not part of the "
    "idempotency fingerprint: a retried request with a new traceparent is still the same request.")


@router.post("", response_model=ExecutionOut, status_code=201,
             responses={200: {"model": ExecutionOut,
                              "description": "an idempotency key already stored with the same body"},
                        **problems(413)})
async def enqueue(
    body: JobIn,
    idempotency_key: Annotated[str | None, Header(alias="Idempotency-Key")] = None,
    traceparent: Annotated[str | None, Header(description=TRACEPARENT_DOC)] = None,
    s: Services = Depends(services),
) -> Response:
    """Enqueue one job. A repeated idempotency key with the same body answers 200 with the first execution."""
    view, status = await enqueue_one(s, body, idempotency_key, traceparent)
    return FastJSON(view, status_code=status)


@router.post("/batch", response_model=BatchOut, status_code=201, responses=problems(413))
async def enqueue_batch(
    body: BatchIn,
    traceparent: Annotated[str | None, Header(description=TRACEPARENT_DOC)] = None,
    s: Services = Depends(services),
) -> Response:
    """Enqueue 1–1,000 jobs atomically: one invalid item rejects all, naming it (`jobs[i]…`)."""
    view, status = await enqueue_many(s, body, traceparent)
    return FastJSON(view, status_code=status)


# The operations, shared with the routes served below the framework (app/api/hot.py).

async def enqueue_one(s: Services, body: JobIn, idempotency_key: str | None,
                      traceparent: str | None) -> tuple[dict[str, Any], int]:
    if idempotency_key is not None:
        if not is_valid_name(idempotency_key):
            raise ValidationFailed([FieldError("Idempotency-Key", "must match ^[A-Za-z0-9][A-Za-z0-9._:-]{0,254}$")])
        if body.idempotency_key is not None and body.idempotency_key != idempotency_key:
            raise ValidationFailed([FieldError("idempotency_key", "differs from the Idempotency-Key header")])
    [done] = await s.enqueue.enqueue([body.to_new_job(idempotency_key, valid_traceparent(traceparent))])
    return execution_view(done.execution), 201 if done.created else 200


async def enqueue_many(s: Services, body: BatchIn, traceparent: str | None) -> tuple[dict[str, Any], int]:
    trace = valid_traceparent(traceparent)
    done = await s.enqueue.enqueue([job.to_new_job(traceparent=trace) for job in body.jobs], field_prefix="jobs")
    return {"items": [execution_view(d.execution) for d in done]}, 201
