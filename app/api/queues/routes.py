"""GET /v1/queues, POST /v1/queues/{name}/pause | resume."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Request
from starlette.responses import Response

from app.api.auth import ManagementRoute, queues_of, requires
from app.api.fields import Name
from app.api.queues.models import QueueList, QueueOut
from app.api.queues.views import queue_view
from app.api.responses import FastJSON
from app.api.services import services_of
from app.domain.access import Scope

router = APIRouter(prefix="/v1/queues", tags=["queues"], route_class=ManagementRoute)
QueueName = Annotated[Name, Path(description="queue name")]


@router.get("", operation_id="listQueues", response_model=QueueList)
@requires(Scope.READ)
async def list_queues(request: Request) -> Response:
    """Every queue with executions or a pause flag: counts by state, the age of its oldest
    claimable job (null when none is due), paused."""
    s = services_of(request)
    return FastJSON({"items": [queue_view(q) for q in await s.queues.list(queues_of(request))]})


@router.post("/{name}/pause", operation_id="pauseQueue", response_model=QueueOut)
@requires(Scope.OPERATE)
async def pause_queue(name: QueueName, request: Request) -> Response:
    """No node claims from a paused queue; enqueue still works and running calls finish."""
    s = services_of(request)
    return FastJSON(queue_view(await s.queues.set_paused(name, True, queues_of(request))))


@router.post("/{name}/resume", operation_id="resumeQueue", response_model=QueueOut)
@requires(Scope.OPERATE)
async def resume_queue(name: QueueName, request: Request) -> Response:
    s = services_of(request)
    return FastJSON(queue_view(await s.queues.set_paused(name, False, queues_of(request))))
