"""Handlers: each one's URL and limits, its calls in flight and its failure rate over the last
minutes (the attempt outcome events, read through their index on time, as the overview's chart)."""

from __future__ import annotations

from fastapi import APIRouter
from starlette.requests import Request
from starlette.responses import Response

from app.services.dashboard import CHART_MINUTES
from app.ui.access import viewer
from app.ui.context import ui_of
from app.ui.render import render

router = APIRouter()


@router.get("/ui/handlers")
async def handlers(request: Request) -> Response:
    who = await viewer(request)
    ui = ui_of(request)
    found = await ui.handlers.list()  # handlers belong to no queue: every key that reads sees them
    activity = await ui.dashboard.handler_activity(who.queues)
    return render(request, who, "handlers.html", handlers=found, activity=activity, minutes=CHART_MINUTES)
