"""/v1/workflows: jobs with dependencies, made at once, seen, cancelled and retried."""

from __future__ import annotations

from typing import Annotated, Any
from uuid import UUID

from fastapi import APIRouter, Query, Request
from starlette.responses import Response

from app.api.auth import ManagementRoute, queues_of, requires
from app.api.executions.models import StateName
from app.api.fields import Name
from app.api.responses import FastJSON, problems
from app.api.services import services_of
from app.api.workflows.models import (
    WorkflowIn, WorkflowJobPage, WorkflowJobsAdded, WorkflowJobsIn, WorkflowMade, WorkflowOut, WorkflowPage,
    WorkflowRetried, WorkflowStateName, refuse_debounce,
)
from app.domain.access import Scope
from app.domain.workflows import Workflow, WorkflowFilter, WorkflowItem, WorkflowState

router = APIRouter(prefix="/v1/workflows", tags=["workflows"], route_class=ManagementRoute)
Limit = Annotated[int, Query(ge=1, le=1000, description="items per page")]
Cursor = Annotated[str | None, Query(max_length=200, description="the previous page's `next_cursor`; omitted: the "
                                                                 "first page")]


def workflow_view(w: Workflow) -> dict[str, Any]:
    return {"id": str(w.id), "name": w.name, "metadata": w.metadata, "state": w.state.value, "counts": dict(w.counts),
            "jobs": w.jobs, "created_at": w.created_at, "updated_at": w.updated_at, "completed_at": w.completed_at}


def item_view(i: WorkflowItem) -> dict[str, Any]:
    return {"ref": i.ref, "execution_id": str(i.execution_id), "state": i.state}


@router.post("", operation_id="createWorkflow", response_model=WorkflowMade, status_code=201,
             responses={200: {"model": WorkflowMade, "description": "an idempotency key already stored with the same "
                                                                    "body: the workflow made then"},
                        **problems(403, 413, 422)})
@requires(Scope.ENQUEUE)
async def create_workflow(body: WorkflowIn, request: Request) -> Response:
    """Make a workflow of 1–1,000 jobs atomically (all or none). A job with `depends_on` is WAITING until
    its parents are terminal; one whose parents all succeeded is then ENQUEUED; a parent that ends
    DEAD_LETTER or CANCELLED cancels it (`on_dependency_failure: cancel`, the default) or lets it run
    once all are terminal (`run`). An unknown or duplicate ref, a self-dependency or a cycle → 422
    naming the field (`jobs[3].depends_on[0]`). A job that depends on all the others with
    `on_dependency_failure: run` is a batch callback."""
    refuse_debounce(body.jobs)
    made = await services_of(request).workflows.create(body.to_new_workflow(), queues_of(request))
    view = workflow_view(made.workflow) | {"items": [item_view(i) for i in made.items]}
    return FastJSON(view, status_code=201 if made.created else 200)


@router.get("", operation_id="listWorkflows", response_model=WorkflowPage)
@requires(Scope.READ)
async def list_workflows(
    request: Request,
    state: Annotated[WorkflowStateName | None, Query(description="only workflows in this state")] = None,
    name: Annotated[Name | None, Query(description="only workflows of this name")] = None,
    limit: Limit = 50,
    cursor: Cursor = None,
) -> Response:
    """Newest first, `limit` per page; pass `next_cursor` back as `cursor`. A key limited to queues sees
    the workflows whose jobs are all in its queues."""
    where = WorkflowFilter(state=WorkflowState(state) if state else None, name=name)
    page = await services_of(request).workflows.list(where, limit, cursor, queues_of(request))
    return FastJSON({"items": [workflow_view(w) for w in page.items], "next_cursor": page.next_cursor})


@router.get("/{workflow_id}", operation_id="getWorkflow", response_model=WorkflowOut, responses=problems(404))
@requires(Scope.READ)
async def get_workflow(workflow_id: UUID, request: Request) -> Response:
    """The workflow with its jobs counted by state (kept by the transitions: reading counts nothing)."""
    return FastJSON(workflow_view(await services_of(request).workflows.get(workflow_id, queues_of(request))))


@router.get("/{workflow_id}/jobs", operation_id="listWorkflowJobs", response_model=WorkflowJobPage,
            responses=problems(404))
@requires(Scope.READ)
async def list_workflow_jobs(
    workflow_id: UUID,
    request: Request,
    state: Annotated[StateName | None, Query(description="only jobs in this state")] = None,
    limit: Limit = 100,
    cursor: Cursor = None,
) -> Response:
    """Its jobs by ref, each with the refs it depends on; `limit` per page, `next_cursor` for the next."""
    page = await services_of(request).workflows.jobs(workflow_id, state, limit, cursor, queues_of(request))
    return FastJSON({"items": [{"ref": j.ref, "execution_id": str(j.execution_id), "state": j.state,
                                "queue": j.queue, "depends_on": list(j.depends_on)} for j in page.items],
                     "next_cursor": page.next_cursor})


@router.post("/{workflow_id}/jobs", operation_id="addWorkflowJobs", response_model=WorkflowJobsAdded,
             status_code=201, responses=problems(403, 404, 409, 413, 422))
@requires(Scope.ENQUEUE)
async def add_workflow_jobs(workflow_id: UUID, body: WorkflowJobsIn, request: Request) -> Response:
    """Add 1–1,000 jobs to a RUNNING workflow (409 once it is finished; at most 10,000 jobs in all). They
    may depend on any of its refs, finished ones included: a parent that succeeded counts as done, one
    that failed cancels a `cancel` child at once."""
    refuse_debounce(body.jobs)
    workflow, items = await services_of(request).workflows.add_jobs(
        workflow_id, [j.to_workflow_job() for j in body.jobs], queues_of(request))
    return FastJSON({"workflow": workflow_view(workflow), "items": [item_view(i) for i in items]}, status_code=201)


@router.post("/{workflow_id}/cancel", operation_id="cancelWorkflow", response_model=WorkflowOut,
             responses=problems(404, 409))
@requires(Scope.OPERATE)
async def cancel_workflow(workflow_id: UUID, request: Request) -> Response:
    """Cancel every unfinished job (WAITING, ENQUEUED, PROCESSING: a running handler learns it from its
    next callback); the workflow ends CANCELLED. 409 for a finished workflow."""
    return FastJSON(workflow_view(await services_of(request).workflows.cancel(workflow_id, queues_of(request))))


@router.post("/{workflow_id}/retry", operation_id="retryWorkflow", response_model=WorkflowRetried,
             responses=problems(404, 409))
@requires(Scope.OPERATE)
async def retry_workflow(workflow_id: UUID, request: Request) -> Response:
    """Run the graph on from where it stopped: its dead-lettered jobs are enqueued again (a new attempt
    each) and the jobs a failed dependency cancelled wait again; a succeeded job never runs again.
    409 when there is nothing to retry."""
    done = await services_of(request).workflows.retry(workflow_id, queues_of(request))
    return FastJSON(workflow_view(done.workflow) | {"waiting_again": done.waiting_again, "retried": done.retried})
