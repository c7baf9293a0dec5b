"""Schedules: each one's cron and time zone, its next fires, its last success and failure and its
failures in a row; trigger now and delete (scope admin, as the API's schedule routes)."""

from __future__ import annotations

from fastapi import APIRouter
from starlette.requests import Request
from starlette.responses import Response

from app.domain.access import Scope
from app.domain.errors import JobwireError
from app.ui.access import viewer
from app.ui.context import ui_of
from app.ui.render import acting, back, render

router = APIRouter()
NEXT_FIRES = 3  # fire instants shown per schedule


@router.get("/ui/schedules")
async def schedules(request: Request) -> Response:
    who = await viewer(request)
    rows = await ui_of(request).schedules.list_with_fires(NEXT_FIRES, who.queues)
    return render(request, who, "schedules.html", rows=rows)


@router.post("/ui/schedules/{job_id}/{action}")
async def act(request: Request, job_id: str, action: str) -> Response:
    who, fields = await acting(request, Scope.ADMIN)
    if action not in ("trigger", "delete"):
        return back(request, "/ui/schedules", f"Unknown action {action!r}.", "error", who)
    service = ui_of(request).schedules
    try:
        if action == "trigger":
            execution = await service.trigger(job_id, who.queues)
        else:
            await service.delete(job_id, who.queues)
    except JobwireError as exc:
        return back(request, "/ui/schedules", str(exc), "error", who)
    if action == "trigger":
        return back(request, f"/ui/executions/{execution.id}", f"Schedule {job_id} fired: this is its execution.",
                    viewer=who)
    return back(request, "/ui/schedules", f"Schedule {job_id} deleted (the executions it fired stay).", viewer=who)
