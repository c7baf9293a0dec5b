"""PUT/GET/DELETE /v1/schedules, POST …/trigger, GET …/preview (DESIGN §4, §6.3)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Query, Request
from starlette.responses import Response

from app.api.auth import ManagementRoute, queues_of, requires
from app.api.executions.models import ExecutionOut
from app.api.executions.views import execution_view
from app.api.fields import Name
from app.api.responses import FastJSON, problems
from app.api.schedules.models import ScheduleIn, ScheduleList, ScheduleOut, SchedulePreview
from app.api.schedules.views import schedule_view
from app.api.services import services_of
from app.domain.access import Scope
from app.domain.schedules import ExecutionMode, MisfirePolicy, OverlapPolicy, ScheduleSpec

router = APIRouter(prefix="/v1/schedules", tags=["schedules"], route_class=ManagementRoute)
JobId = Annotated[Name, Path(description="the schedule's job_id (its executions carry it)")]


@router.put("/{job_id}", operation_id="putSchedule", response_model=ScheduleOut, status_code=200,
            responses={201: {"model": ScheduleOut, "description": "created"}, **problems(413)})
@requires(Scope.ADMIN)
async def put_schedule(job_id: JobId, body: ScheduleIn, request: Request) -> Response:
    """Create (201) or replace (200) a schedule: the caller's definition overwrites the stored one.
    Re-declaring an identical definition changes nothing. A new or changed schedule fires only
    instants after its `updated_at`. An invalid `cron`, unknown `timezone` or unregistered
    `handler` → 422 naming the field. A key limited to queues keeps schedules in those only: one in
    another queue, or moving one into or out of such a queue, → 403."""
    s = services_of(request)
    spec = ScheduleSpec(
        cron=body.cron, timezone=body.timezone, handler=body.handler, queue=body.queue, payload=body.payload,
        parameters=body.parameters, metadata=body.metadata, priority=body.priority, enabled=body.enabled,
        execution_mode=ExecutionMode(body.execution_mode), overlap_policy=OverlapPolicy(body.overlap_policy),
        misfire_policy=MisfirePolicy(body.misfire_policy), max_attempts=body.max_attempts, tracked=body.tracked)
    schedule, created = await s.schedules.put(job_id, spec, queues_of(request))
    return FastJSON(schedule_view(schedule), status_code=201 if created else 200)


@router.get("", operation_id="listSchedules", response_model=ScheduleList)
@requires(Scope.READ)
async def list_schedules(request: Request) -> Response:
    """Every schedule, by job_id; to a key limited to queues, those queues' only."""
    s = services_of(request)
    return FastJSON({"items": [schedule_view(x) for x in await s.schedules.list(queues_of(request))]})


@router.get("/{job_id}", operation_id="getSchedule", response_model=ScheduleOut, responses=problems(404))
@requires(Scope.READ)
async def get_schedule(job_id: JobId, request: Request) -> Response:
    """One schedule. To a key limited to queues, another queue's is 404, as one that does not exist
    (so on every route of a schedule)."""
    s = services_of(request)
    return FastJSON(schedule_view(await s.schedules.get(job_id, queues_of(request))))


@router.delete("/{job_id}", operation_id="deleteSchedule", status_code=204, responses=problems(404))
@requires(Scope.ADMIN)
async def delete_schedule(job_id: JobId, request: Request) -> Response:
    """Every node stops firing it within one tick; executions it fired stay."""
    s = services_of(request)
    await s.schedules.delete(job_id, queues_of(request))
    return Response(status_code=204)


@router.post("/{job_id}/trigger", operation_id="triggerSchedule",
             response_model=ExecutionOut, status_code=201, responses=problems(404, 409))
@requires(Scope.ADMIN)
async def trigger_schedule(job_id: JobId, request: Request) -> Response:
    """Fire now, once: a CRON execution with `fire_at` = now, exempt from the overlap policy."""
    s = services_of(request)
    return FastJSON(execution_view(await s.schedules.trigger(job_id, queues_of(request))), status_code=201)


@router.get("/{job_id}/preview", operation_id="previewSchedule",
            response_model=SchedulePreview, responses=problems(404))
@requires(Scope.READ)
async def preview_schedule(
    job_id: JobId,
    request: Request,
    count: Annotated[int, Query(ge=1, le=100, description="how many instants")] = 10,
) -> Response:
    """The next fire instants from now (UTC), with the time zone and DST resolved."""
    s = services_of(request)
    return FastJSON({"items": await s.schedules.preview(job_id, count, queues_of(request))})
