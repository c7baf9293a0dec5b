"""POST …/complete, …/progress, …/heartbeat, …/logs, …/children; GET …/parents, …/children; GET
and PUT …/steps/{name}."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated
from uuid import UUID

from fastapi import APIRouter, Path, Query, Request
from starlette.responses import Response

from app.api.auth import bearer_token
from app.api.body import NulStrippingRoute, StrictJSONRoute, body_as, path_uuid
from app.api.direct import direct
from app.api.callbacks.models import (
    CancelRequested,
    ChildPage,
    ChildrenIn,
    CompleteIn,
    LogsIn,
    LogsStored,
    ParentPage,
    ProgressIn,
    Spawned,
    StepIn,
    StepOut,
)
from app.api.executions.models import ExecutionOut
from app.api.executions.views import execution_view
from app.api.responses import FastJSON
from app.api.services import services_of
from app.api.workflows.models import refuse_debounce
from app.domain.errors import FieldError, ValidationFailed
from app.domain.logs import LogEntry, LogLevel, normalize_message
from app.domain.waits import InvalidSuspend, parse_suspend
from app.domain.names import NAME_PATTERN
from app.domain.steps import Step
from app.services.callbacks import Completion

router = APIRouter(prefix="/v1/executions", tags=["callbacks"], route_class=StrictJSONRoute)


@router.post("/{execution_id}/complete", operation_id="completeExecution", response_model=ExecutionOut,
             openapi_extra=direct(CompleteIn, path={"execution_id": "the execution"}))
async def complete(request: Request) -> Response:
    """Report the outcome of an accepted (202) attempt. One that cannot apply is a 200 no-op.
    `error.type` names the failure (default `handler_failed`); types beginning with `abandoned_`
    are Jobwire's own (a late success may still win over those) and are refused with 422."""
    execution_id = path_uuid(request, "execution_id")
    body = body_as(request, CompleteIn)
    s = services_of(request)
    suspend = None
    if body.outcome == "suspended":
        if body.suspend is None:
            raise ValidationFailed([FieldError("suspend", "required with outcome suspended")])
        try:
            suspend = parse_suspend(body.suspend.model_dump(mode="json", exclude_none=True), datetime.now(UTC))
        except InvalidSuspend as exc:
            raise ValidationFailed([FieldError("suspend", str(exc))]) from None
    completion = Completion(
        succeeded=body.outcome == "succeeded",
        result=body.result,
        error_message=body.error.message if body.error else None,
        error_type=body.error.type if body.error else None,
        retryable=body.retryable,
        suspend=suspend,
    )
    done = await s.callbacks.complete(execution_id, bearer_token(request), completion,
                                      traceparent=request.headers.get("traceparent"))
    return FastJSON(execution_view(done))


@router.post("/{execution_id}/progress", operation_id="reportProgress", response_model=CancelRequested)
async def progress(execution_id: UUID, body: ProgressIn, request: Request) -> Response:
    """Store a progress snapshot (omitted fields keep their values) and extend the deadline to
    now + timeout (never past started_at + max_duration_seconds). During a synchronous call too:
    the node waits for the moved deadline before it gives up on the call. `cancel_requested` is
    true once the execution is no longer PROCESSING."""
    s = services_of(request)
    snapshot = body.model_dump(exclude_unset=True)
    cancel = await s.callbacks.report_progress(execution_id, bearer_token(request), snapshot or None)
    return FastJSON({"cancel_requested": cancel})


@router.post("/{execution_id}/heartbeat", operation_id="heartbeat", response_model=CancelRequested)
async def heartbeat(execution_id: UUID, request: Request) -> Response:
    """Extend the deadline to now + timeout (never past started_at + max_duration_seconds)
    without a snapshot, for an accepted attempt or during a synchronous call, which then waits
    for the moved deadline; answers `cancel_requested`."""
    s = services_of(request)
    cancel = await s.callbacks.report_progress(execution_id, bearer_token(request), None)
    return FastJSON({"cancel_requested": cancel})


async def logs(execution_id: UUID, body: LogsIn, request: Request) -> Response:
    """Append log entries (at most 500 per call), stored with the token's attempt. A message is
    kept as sent except: null → `<null>`; C0 control characters other than \\n \\r \\t removed;
    then over 8192 code points → the first 8192 and `…[truncated N chars]` (N code points removed).
    `logged_at` defaults to the time Jobwire stores the entry. Accepted in any state of the
    execution (a handler may flush its logs after completing), from the current attempt only; 404
    once the execution is deleted (also when its delete commits during this call: nothing stored)."""
    s = services_of(request)
    entries = [LogEntry(LogLevel(e.level), normalize_message(e.message), e.logged_at) for e in body.entries]
    stored = await s.callbacks.append_logs(execution_id, bearer_token(request), entries)
    return FastJSON({"stored": stored})


# Messages may carry NUL characters: normalize_message removes them.
router.add_api_route("/{execution_id}/logs", logs, methods=["POST"], operation_id="appendExecutionLogs",
                     response_model=LogsStored, route_class_override=NulStrippingRoute)


StepName = Annotated[str, Path(pattern=NAME_PATTERN, description="a name: " + NAME_PATTERN)]


def _step_view(step: Step) -> dict[str, object]:
    return {"name": step.name, "result": step.result, "completed_at": step.completed_at}


def _page_view(items: list[dict[str, object]], next_after: str | None) -> dict[str, object]:
    return {"items": [{**i, "execution_id": str(i["execution_id"])} for i in items], "next_after": next_after}


@router.get("/{execution_id}/parents", operation_id="listParents", response_model=ParentPage)
async def list_parents(
    execution_id: UUID,
    request: Request,
    after: Annotated[str, Query(max_length=200, description="the previous page's `next_after`")] = "",
    limit: Annotated[int, Query(ge=1, le=1000, description="items per page")] = 100,
) -> Response:
    """A job of a workflow: its parents by ref with their results, a page at a time (a dispatch
    inlines them only while they total at most 256 KiB). Empty for a job outside workflows."""
    s = services_of(request)
    items, next_after = await s.callbacks.parents(execution_id, bearer_token(request), after, limit)
    return FastJSON(_page_view(items, next_after))


@router.post("/{execution_id}/children", operation_id="spawnChildren", response_model=Spawned, status_code=201,
             responses={200: {"model": Spawned, "description": "every ref was spawned by this execution before: "
                                                               "those children, unchanged"}})
async def spawn_children(execution_id: UUID, body: ChildrenIn, request: Request) -> Response:
    """Spawn 1–1,000 children from a running attempt (its callback token): every field of a workflow's
    job (`ref`, `depends_on` naming refs this execution spawned, `on_dependency_failure`, and those
    of POST /v1/jobs but `debounce`). They join the execution's workflow (one is made, named after
    its handler, for an execution outside workflows) as `<its ref>/<ref>`, at most 10,000 jobs in
    all, and run at once unless they depend on one another. Idempotent per (execution, ref): a ref
    spawned before answers that child (200 when every ref was), so a replayed handler gets the same
    executions back. Answer a dispatch with `{"suspend": {"children": "all"}}` to be dispatched
    again once every child is terminal (fan-out, fan-in). 409 when the attempt is not PROCESSING."""
    refuse_debounce(body.jobs)
    s = services_of(request)
    attempt = s.callbacks.authorize(execution_id, bearer_token(request))
    spawned = await s.workflows.spawn(execution_id, attempt, [j.to_workflow_job() for j in body.jobs])
    return FastJSON({"workflow_id": str(spawned.workflow_id),
                     "items": [{"ref": i.ref, "execution_id": str(i.execution_id), "state": i.state}
                               for i in spawned.items]},
                    status_code=201 if spawned.created else 200)


@router.get("/{execution_id}/children", operation_id="listChildren", response_model=ChildPage)
async def list_children(
    execution_id: UUID,
    request: Request,
    after: Annotated[str, Query(max_length=300, description="the previous page's `next_after`")] = "",
    limit: Annotated[int, Query(ge=1, le=1000, description="items per page")] = 100,
) -> Response:
    """The children this execution spawned, by the refs it gave, with their results, a page at a time
    (a resumed dispatch inlines them only while they total at most 256 KiB)."""
    s = services_of(request)
    items, next_after = await s.callbacks.children(execution_id, bearer_token(request), after, limit)
    return FastJSON(_page_view(items, next_after))


@router.get("/{execution_id}/steps/{name}", operation_id="getStep", response_model=StepOut)
async def get_step(execution_id: UUID, name: StepName, request: Request) -> Response:
    """A step recorded by this or an earlier attempt of the execution; 404 until one records it."""
    s = services_of(request)
    return FastJSON(_step_view(await s.callbacks.get_step(execution_id, bearer_token(request), name)))


@router.put("/{execution_id}/steps/{name}", operation_id="putStep", response_model=StepOut, status_code=201,
            responses={200: {"model": StepOut, "description": "recorded before: the first result, kept"}})
async def put_step(execution_id: UUID, name: StepName, body: StepIn, request: Request) -> Response:
    """Run-step-once: record a step's result. The first record answers 201; any later one (from
    this or a later attempt) answers 200 with the first result, which is kept. 404 once the
    execution is deleted (also when its delete commits during this call: nothing stored)."""
    s = services_of(request)
    step, created = await s.callbacks.record_step(execution_id, bearer_token(request), name, body.result)
    return FastJSON(_step_view(step), status_code=201 if created else 200)
