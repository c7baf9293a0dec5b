"""POST /v1/jobs and /v1/jobs/batch: every job enters here."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.exceptions import RequestValidationError
from starlette.responses import Response

from app.api.auth import ManagementRoute, queues_of, requires
from app.api.body import body_as
from app.api.direct import direct
from app.api.executions.views import execution_view
from app.api.jobs.faults import every_fault
from app.api.executions.models import ExecutionOut
from app.api.jobs.models import BatchIdsOut, BatchIn, BatchOut, JobIn
from app.api.responses import FastJSON, problems
from app.api.services import services_of
from app.domain.access import Scope
from app.domain.errors import FieldError, ValidationFailed
from app.domain.names import NAME_PATTERN, is_valid_name
from app.domain.tracing import valid_traceparent

router = APIRouter(prefix="/v1/jobs", tags=["jobs"], route_class=ManagementRoute)
TRACEPARENT_DOC = (
    "W3C trace context (`00-<32 hex>-<16 hex>-<2 hex>`): stored as `metadata.context.traceparent` of each "
    "job unless its metadata sets one (the body wins); an invalid value is ignored. Not part of the "
    "idempotency fingerprint: a retried request with a new traceparent is still the same request.")
PREFER_DOC = ("`return=minimal` (RFC 7240): the answer is `{ids: [...]}`, each item's execution id in item order, "
              "with `Preference-Applied: return=minimal`; without it the answer is the executions (`items`)")
IDEMPOTENCY_DOC = ("the job's idempotency key, as the body's `idempotency_key` (both present and different: 422); "
                   "a repeat with the same body answers 200 with the first execution")


@router.post("", operation_id="enqueueJob", response_model=ExecutionOut, status_code=201,
             responses={200: {"model": ExecutionOut,
                              "description": "an idempotency key already stored with the same body, or a debounced "
                                             "enqueue (`debounced`: the execution that took it)"},
                        **problems(413)},
             openapi_extra=direct(JobIn, headers={"Idempotency-Key": IDEMPOTENCY_DOC, "traceparent": TRACEPARENT_DOC}))
@requires(Scope.ENQUEUE)
async def enqueue(request: Request) -> Response:
    """Enqueue one job. A repeated idempotency key with the same body answers 200 with the first execution.
    A key limited to queues may enqueue into those only (403 naming the queue). A 422 names every field
    at fault at once: an unregistered handler beside the fields the schema refuses."""
    try:
        body = body_as(request, JobIn)
    except RequestValidationError as refused:
        raise await every_fault(request, refused, batch=False) from None
    idempotency_key = request.headers.get("idempotency-key")
    traceparent = request.headers.get("traceparent")
    s = services_of(request)
    if idempotency_key is not None:
        if not is_valid_name(idempotency_key):
            raise ValidationFailed([FieldError("Idempotency-Key", f"must match {NAME_PATTERN}")])
        if body.idempotency_key is not None and body.idempotency_key != idempotency_key:
            raise ValidationFailed([FieldError("idempotency_key", "differs from the Idempotency-Key header")])
    [done] = await s.enqueue.enqueue([body.to_new_job(idempotency_key, valid_traceparent(traceparent))],
                                     queues=queues_of(request))
    view = execution_view(done.execution)
    if body.debounce is not None:
        view["debounced"] = done.debounced
    return FastJSON(view, status_code=201 if done.created else 200)


@router.post("/batch", operation_id="enqueueJobs", response_model=BatchOut | BatchIdsOut, status_code=201,
             responses=problems(413),
             openapi_extra=direct(BatchIn, headers={"traceparent": TRACEPARENT_DOC, "Prefer": PREFER_DOC}))
@requires(Scope.ENQUEUE)
async def enqueue_batch(request: Request) -> Response:
    """Enqueue 1–1,000 jobs atomically: one invalid item rejects all, naming it (`jobs[i]…`); so does
    an item in a queue the key is not limited to (403). A 422 names every item at fault at once, in
    item order (the first 100 errors): the fields the schema refuses and what the database refuses of
    the other items (an unregistered handler, an idempotency key reused with another body). With
    `Prefer: return=minimal` the answer is the ids alone (`{ids: [...]}`)."""
    try:
        body = body_as(request, BatchIn)
    except RequestValidationError as refused:
        raise await every_fault(request, refused, batch=True) from None
    debounced = [FieldError(f"jobs[{i}].debounce", "only POST /v1/jobs debounces: send this job alone")
                 for i, job in enumerate(body.jobs) if job.debounce is not None]
    if debounced:
        raise ValidationFailed(debounced)
    s = services_of(request)
    trace = valid_traceparent(request.headers.get("traceparent"))
    if prefers_minimal(request):
        ids = await s.enqueue.enqueue_ids([job.to_new_job(traceparent=trace) for job in body.jobs],
                                          queues=queues_of(request))
        return FastJSON({"ids": ids}, status_code=201, headers={"Preference-Applied": "return=minimal"})
    done = await s.enqueue.enqueue([job.to_new_job(traceparent=trace) for job in body.jobs], field_prefix="jobs",
                                   queues=queues_of(request))
    return FastJSON({"items": [{**execution_view(d.execution), "created": d.created} for d in done]},
                    status_code=201)


def prefers_minimal(request: Request) -> bool:
    """The request's `Prefer` headers (RFC 7240: preferences separated by commas, each `token[=value]`
    with optional `;` parameters, tokens case-insensitive, a value possibly quoted) ask
    `return=minimal`."""
    for header in request.headers.getlist("prefer"):
        for preference in header.split(","):
            name, _, value = preference.split(";", 1)[0].partition("=")
            if name.strip().lower() == "return" and value.strip().strip('"').lower() == "minimal":
                return True
    return False
