"""Workflows: the list by state and name (keyset paging through the listing's cursor), and a
workflow's page: its counts, its jobs, its graph drawn from them (app/ui/graph.py), retry and
cancel through the workflow service, as POST /v1/workflows/{id}/retry and /cancel."""

from __future__ import annotations

from uuid import UUID

from fastapi import APIRouter
from starlette.requests import Request
from starlette.responses import Response

from app.domain.access import Scope
from app.domain.errors import JobwireError, NotFound, ValidationFailed
from app.domain.workflows import WorkflowFilter, WorkflowJobRow, WorkflowState
from app.ui.access import viewer
from app.ui.context import ui_of
from app.ui.graph import MAX_NODES, layout
from app.ui.pages.executions import PAGE_SIZE, Filter, given_of
from app.ui.render import acting, back, render

router = APIRouter()
FILTERS = (Filter("state", "State", choices=tuple(s.value for s in WorkflowState)), Filter("name", "Name"))
JOBS_READ = 1000  # a workflow's jobs its page reads at most (by ref); a workflow holds up to 10,000
JOBS_PAGE = 500  # jobs per call of the workflow service


def _uuid(text: str) -> UUID | None:
    try:
        return UUID(text)
    except ValueError:
        return None


@router.get("/ui/workflows")
async def workflows(request: Request) -> Response:
    who = await viewer(request)
    given = given_of(request, FILTERS)
    state = given["state"] if given["state"] in {s.value for s in WorkflowState} else None
    cursor = request.query_params.get("cursor") or None
    where = WorkflowFilter(state=WorkflowState(state) if state else None, name=given["name"] or None)
    error = None
    try:
        page = await ui_of(request).workflows.list(where, PAGE_SIZE, cursor, who.queues)
        items, next_cursor = page.items, page.next_cursor
    except ValidationFailed as exc:
        items, next_cursor, error = [], None, str(exc)
    return render(request, who, "workflows.html", filters=FILTERS, given=given, items=items,
                  next_cursor=next_cursor, first_page=cursor is None, error=error)


@router.get("/ui/workflows/{workflow_id}")
async def workflow_page(request: Request, workflow_id: str) -> Response:
    who = await viewer(request)
    service = ui_of(request).workflows
    found = _uuid(workflow_id)
    try:
        if found is None:
            raise NotFound("workflow", workflow_id)
        workflow = await service.get(found, who.queues)
        jobs: list[WorkflowJobRow] = []
        cursor = None
        while len(jobs) < JOBS_READ:
            page = await service.jobs(found, None, JOBS_PAGE, cursor, who.queues)
            jobs += page.items
            cursor = page.next_cursor
            if cursor is None:
                break
    except NotFound:
        return render(request, who, "not_found.html", status=404, what=f"workflow {workflow_id}")
    graph = layout(jobs, total=max(workflow.jobs, len(jobs)))
    return render(request, who, "workflow.html", w=workflow, jobs=jobs, more_jobs=cursor is not None, graph=graph,
                  max_nodes=MAX_NODES, can_cancel=workflow.state == WorkflowState.RUNNING,
                  can_retry=workflow.state in (WorkflowState.FAILED, WorkflowState.RUNNING)
                  and any(workflow.counts.get(s) for s in ("DEAD_LETTER", "CANCELLED")))


@router.post("/ui/workflows/{workflow_id}/{action}")
async def act(request: Request, workflow_id: str, action: str) -> Response:
    who, fields = await acting(request, Scope.OPERATE)
    found = _uuid(workflow_id)
    if found is None or action not in ("cancel", "retry"):
        return back(request, "/ui/workflows", "No such workflow or action.", "error", who)
    page = f"/ui/workflows/{found}"
    service = ui_of(request).workflows
    try:
        if action == "cancel":
            done = await service.cancel(found, who.queues)
            message = f"Cancelled: the workflow is {done.state.value} now."
        else:
            retried = await service.retry(found, who.queues)
            message = (f"Retried: {retried.retried} dead-lettered job{'s' if retried.retried != 1 else ''} enqueued "
                       f"again, {retried.waiting_again} waiting again.")
    except JobwireError as exc:
        return back(request, page, str(exc), "error", who)
    return back(request, page, message, viewer=who)
