"""GET/list executions, their logs, cancel, retry."""

from __future__ import annotations

from typing import Annotated, Literal
from uuid import UUID

from fastapi import APIRouter, Depends, Query
from starlette.responses import Response

from app.api.body import ManagementRoute
from app.api.responses import FastJSON
from app.api.schemas import ExecutionOut, ExecutionPage, LogPage, Name, problems
from app.api.services import Services, services
from app.api.views import execution_view
from app.domain.executions import ListFilter

router = APIRouter(prefix="/v1/executions", tags=["executions"], route_class=ManagementRoute)
StateName = Literal["ENQUEUED", "PROCESSING", "SUCCEEDED", "FAILED", "CANCELLED", "ABANDONED", "DEAD_LETTER"]


@router.get("", response_model=ExecutionPage)
async def list_executions(
    state: StateName | None = None,
    queue: Name | None = None,
    handler: Name | None = None,
    job_id: Name | None = None,
    limit: Annotated[int, Query(ge=1, le=500)] = 50,
    cursor: Annotated[str | None, Query(max_length=200)] = None,
    s: Services = Depends(services),
) -> Response:
    """Newest first, `limit` per page; pass `next_cursor` back as `cursor` for the next page."""
    page = await s.executions.list(ListFilter(state=state, queue=queue, handler=handler, job_id=job_id),
                                   limit, cursor)
    return FastJSON({"items": [execution_view(e) for e in page.items], "next_cursor": page.next_cursor})


@router.get("/{execution_id}", response_model=ExecutionOut, responses=problems(404))
async def get_execution(execution_id: UUID, s: Services = Depends(services)) -> Response:
    return FastJSON(execution_view(await s.executions.get(execution_id)))


@router.get("/{execution_id}/logs", response_model=LogPage, responses=problems(404))
async def execution_logs(
    execution_id: UUID,
    limit: Annotated[int, Query(ge=1, le=500)] = 50,
    cursor: Annotated[str | None, Query(max_length=200)] = None,
    s: Services = Depends(services),
) -> Response:
    """The handlers' log entries, oldest (first received) first, each with the attempt that
    wrote it; `limit` per page, pass `next_cursor` back as `cursor`."""
    page = await s.executions.logs(execution_id, limit, cursor)
    return FastJSON({"items": [{"attempt": e.attempt, "level": e.level.value, "message": e.message,
                                "logged_at": e.logged_at} for e in page.items],
                     "next_cursor": page.next_cursor})


@router.post("/{execution_id}/cancel", response_model=ExecutionOut, responses=problems(404, 409))
async def cancel_execution(execution_id: UUID, s: Services = Depends(services)) -> Response:
    """ENQUEUED or PROCESSING → CANCELLED. A running handler learns it from its progress callback."""
    return FastJSON(execution_view(await s.executions.cancel(execution_id)))


@router.post("/{execution_id}/retry", response_model=ExecutionOut, responses=problems(404, 409))
async def retry_execution(execution_id: UUID, s: Services = Depends(services)) -> Response:
    """DEAD_LETTER or CANCELLED → ENQUEUED now, as a new attempt."""
    return FastJSON(execution_view(await s.executions.retry(execution_id)))
