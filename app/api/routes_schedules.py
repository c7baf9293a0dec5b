"""PUT/GET/DELETE /v1/schedules, POST …/trigger, GET …/preview (DESIGN §4, §6.3)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Path, Query
from starlette.responses import Response

from app.api.body import ManagementRoute
from app.api.responses import FastJSON
from app.api.schemas import (
    ExecutionOut,
    Name,
    ScheduleIn,
    ScheduleList,
    ScheduleOut,
    SchedulePreview,
    problems,
)
from app.api.services import Services, services
from app.api.views import execution_view, schedule_view
from app.domain.schedules import ExecutionMode, MisfirePolicy, OverlapPolicy, ScheduleSpec

router = APIRouter(prefix="/v1/schedules", tags=["schedules"], route_class=ManagementRoute)
JobId = Annotated[Name, Path(description="the schedule's job_id (its executions carry it)")]


@router.put("/{job_id}", response_model=ScheduleOut, status_code=200,
            responses={201: {"model": ScheduleOut, "description": "created"}, **problems(413)})
async def put_schedule(job_id: JobId, body: ScheduleIn, s: Services = Depends(services)) -> Response:
    """Create (201) or replace (200) a schedule: the caller's definition overwrites the stored one.
    Re-declaring an identical definition changes nothing. A new or changed schedule fires only
    instants after its `updated_at`. An invalid `cron`, unknown `timezone` or unregistered
    `handler` → 422 naming the field."""
    spec = ScheduleSpec(
        cron=body.cron, timezone=body.timezone, handler=body.handler, queue=body.queue, payload=body.payload,
        parameters=body.parameters, metadata=body.metadata, priority=body.priority, enabled=body.enabled,
        execution_mode=ExecutionMode(body.execution_mode), overlap_policy=OverlapPolicy(body.overlap_policy),
        misfire_policy=MisfirePolicy(body.misfire_policy), max_attempts=body.max_attempts, tracked=body.tracked)
    schedule, created = await s.schedules.put(job_id, spec)
    return FastJSON(schedule_view(schedule), status_code=201 if created else 200)


@router.get("", response_model=ScheduleList)
async def list_schedules(s: Services = Depends(services)) -> Response:
    return FastJSON({"items": [schedule_view(x) for x in await s.schedules.list()]})


@router.get("/{job_id}", response_model=ScheduleOut, responses=problems(404))
async def get_schedule(job_id: JobId, s: Services = Depends(services)) -> Response:
    return FastJSON(schedule_view(await s.schedules.get(job_id)))


@router.delete("/{job_id}", status_code=204, responses=problems(404))
async def delete_schedule(job_id: JobId, s: Services = Depends(services)) -> Response:
    """Every node stops firing it within one tick; executions it fired stay."""
    await s.schedules.delete(job_id)
    return Response(status_code=204)


@router.post("/{job_id}/trigger", response_model=ExecutionOut, status_code=201, responses=problems(404, 409))
async def trigger_schedule(job_id: JobId, s: Services = Depends(services)) -> Response:
    """Fire now, once: a CRON execution with `fire_at` = now, exempt from the overlap policy."""
    return FastJSON(execution_view(await s.schedules.trigger(job_id)), status_code=201)


@router.get("/{job_id}/preview", response_model=SchedulePreview, responses=problems(404))
async def preview_schedule(
    job_id: JobId,
    count: Annotated[int, Query(ge=1, le=100, description="how many instants")] = 10,
    s: Services = Depends(services),
) -> Response:
    """The next fire instants from now (UTC), with the time zone and DST resolved."""
    return FastJSON({"items": await s.schedules.preview(job_id, count)})
