"""GET /v1/queues, POST /v1/queues/{name}/pause | resume."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Path
from starlette.responses import Response

from app.api.body import ManagementRoute
from app.api.responses import FastJSON
from app.api.schemas import Name, QueueList, QueueOut
from app.api.services import Services, services
from app.domain.executions import QueueStatus
from app.domain.states import JobState

router = APIRouter(prefix="/v1/queues", tags=["queues"], route_class=ManagementRoute)
QueueName = Annotated[Name, Path(description="queue name")]


def queue_view(q: QueueStatus) -> dict[str, Any]:
    return {
        "name": q.name,
        "paused": q.paused,
        "counts": {state.value: q.counts.get(state.value, 0) for state in JobState},
        "oldest_claimable_age_seconds": q.oldest_claimable_age_seconds,
    }


@router.get("", response_model=QueueList)
async def list_queues(s: Services = Depends(services)) -> Response:
    """Every queue with executions or a pause flag: counts by state, the age of its oldest
    claimable job (null when none is due), paused."""
    return FastJSON({"items": [queue_view(q) for q in await s.queues.list()]})


@router.post("/{name}/pause", response_model=QueueOut)
async def pause_queue(name: QueueName, s: Services = Depends(services)) -> Response:
    """No node claims from a paused queue; enqueue still works and running calls finish."""
    return FastJSON(queue_view(await s.queues.set_paused(name, True)))


@router.post("/{name}/resume", response_model=QueueOut)
async def resume_queue(name: QueueName, s: Services = Depends(services)) -> Response:
    return FastJSON(queue_view(await s.queues.set_paused(name, False)))
