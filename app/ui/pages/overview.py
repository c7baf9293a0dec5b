"""Overview: every queue's depth by state with pause and resume, the outcomes of the last 15
minutes, the live nodes, the recent failures."""

from __future__ import annotations

from fastapi import APIRouter
from starlette.requests import Request
from starlette.responses import Response

from app.domain.access import Scope
from app.domain.dashboard import MinuteOutcomes
from app.domain.errors import JobwireError
from app.ui.access import viewer
from app.ui.context import ui_of
from app.ui.render import acting, back, first, render

router = APIRouter()

# The chart's series, bottom to top, each with its CSS class.
SERIES = (("execution.succeeded", "ok"), ("execution.failed", "failed"), ("execution.abandoned", "abandoned"))
CHART_WIDTH, CHART_HEIGHT = 600, 120


def chart(minutes: list[MinuteOutcomes]) -> dict[str, object]:
    """The outcomes as stacked bars, in the SVG's coordinates (drawn by the template)."""
    top = max((m.total for m in minutes), default=0) or 1
    slot = CHART_WIDTH / max(len(minutes), 1)
    bars = []
    for i, minute in enumerate(minutes):
        y = float(CHART_HEIGHT)
        parts = []
        for kind, css in SERIES:
            n = minute.counts.get(kind, 0)
            if n:
                h = n / top * (CHART_HEIGHT - 4)
                y -= h
                parts.append({"y": round(y, 1), "h": round(h, 1), "css": css, "n": n, "kind": kind})
        bars.append({"x": round(i * slot + 2, 1), "w": round(slot - 4, 1), "parts": parts, "minute": minute.minute,
                     "total": minute.total})
    return {"bars": bars, "top": top, "width": CHART_WIDTH, "height": CHART_HEIGHT,
            "series": SERIES, "total": sum(m.total for m in minutes)}


@router.get("/ui")
async def overview(request: Request) -> Response:
    who = await viewer(request)
    data = await ui_of(request).dashboard.overview(who.queues)
    return render(request, who, "overview.html", overview=data, chart=chart(data.minutes))


@router.post("/ui/queues/{name}/{action}")
async def pause_or_resume(request: Request, name: str, action: str) -> Response:
    who, fields = await acting(request, Scope.OPERATE)
    if action not in ("pause", "resume"):
        return back(request, "/ui", f"Unknown action {action!r}.", "error", who)
    ui = ui_of(request)
    try:
        await ui.queues.set_paused(name, action == "pause", who.queues)
    except JobwireError as exc:
        return back(request, "/ui", str(exc), "error", who)
    finally:
        ui.dashboard.forget()
    done = "paused" if action == "pause" else "resumed"
    return back(request, first(fields, "back") or "/ui", f"Queue {name} {done}.", viewer=who)
