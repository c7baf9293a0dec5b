"""Executions: the list with its filters (all in the query string, so a view can be shared) and
keyset paging through the listing's cursor; an execution's page with its attempts, logs, steps,
signals, blockers and workflow relatives; cancel and retry."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any
from uuid import UUID

from fastapi import APIRouter
from starlette.requests import Request
from starlette.responses import Response

from app.domain.access import Scope
from app.domain.errors import FieldError, JobwireError, NotFound, ValidationFailed
from app.domain.executions import Execution, ListFilter
from app.domain.logs import LogLevel
from app.domain.states import CANCEL_FROM, MANUAL_RETRY_FROM, JobState
from app.services.executions import metadata_filter
from app.ui.access import viewer
from app.ui.context import ui_of
from app.ui.render import acting, back, render

router = APIRouter()
PAGE_SIZE = 50
MAX_LOGS = 1000  # log entries a page shows (the first ones)


@dataclass(frozen=True, slots=True)
class Filter:
    """One field of the list's filter form: a query parameter and the ListFilter field it sets."""

    name: str
    label: str
    choices: tuple[str, ...] = ()  # a select of these (and "any"); else a text field
    parse: Callable[[str], Any] = field(default=str)
    placeholder: str = ""


# The list's filters, in the form's order: one line each.
def _time(name: str) -> Callable[[str], datetime]:
    """A filter's time: RFC 3339 with an offset (`Z` or `+01:00`), as the API takes it."""
    def parse(text: str) -> datetime:
        try:
            value = datetime.fromisoformat(text)
        except ValueError:
            value = None
        if value is None or value.tzinfo is None:
            raise ValidationFailed([FieldError(name, "must be an RFC 3339 time with an offset, as "
                                                     "2026-12-01T00:00:00Z")])
        return value
    return parse


FILTERS = (
    Filter("state", "State", choices=tuple(s.value for s in JobState)),
    Filter("queue", "Queue"),
    Filter("handler", "Handler"),
    Filter("job_id", "Job id"),
    Filter("idempotency_key", "Idempotency key"),
    Filter("concurrency_key", "Concurrency key"),
    Filter("metadata", "Metadata", parse=metadata_filter, placeholder="key:value"),
    Filter("created_after", "Created from", parse=_time("created_after"), placeholder="2026-12-01T00:00:00Z"),
    Filter("created_before", "Created before", parse=_time("created_before"), placeholder="2026-12-02T00:00:00Z"),
)


def given_of(request: Request, fields: tuple[Filter, ...] = FILTERS) -> dict[str, str]:
    """The filters' values as the query string gives them (the form shows them back)."""
    return {f.name: request.query_params.get(f.name, "").strip() for f in fields}


def list_filter(given: dict[str, str]) -> ListFilter:
    """The ListFilter of the list's filters as given; ValidationFailed naming a filter that does not parse."""
    values = {f.name: f.parse(given[f.name]) for f in FILTERS if given[f.name]}
    if "state" in values and values["state"] not in {s.value for s in JobState}:
        values.pop("state")
    return ListFilter(**values)


@router.get("/ui/executions")
async def list_executions(request: Request) -> Response:
    who = await viewer(request)
    given = given_of(request)
    cursor = request.query_params.get("cursor") or None
    error = None
    try:
        filters = list_filter(given)
        page = await ui_of(request).executions.list(filters, PAGE_SIZE, cursor, who.queues)
        items, next_cursor = page.items, page.next_cursor
    except ValidationFailed as exc:
        items, next_cursor, error = [], None, str(exc)
    return render(request, who, "executions.html", filters=FILTERS, given=given, items=items,
                  next_cursor=next_cursor, first_page=cursor is None, error=error)


def _uuid(text: str) -> UUID | None:
    try:
        return UUID(text)
    except ValueError:
        return None


def waited(execution: Execution, first_start: datetime | None, now: datetime) -> float | None:
    """Seconds it waited in the queue before its first attempt started (while it still waits:
    since it was created, or since it became due when scheduled for later)."""
    since = max(execution.created_at, execution.scheduled_at) if first_start is None else execution.created_at
    end = first_start
    if end is None:
        if execution.state not in (JobState.ENQUEUED, JobState.WAITING) or execution.scheduled_at > now:
            return None
        end = now
    return max((end - since).total_seconds(), 0.0)


@router.get("/ui/executions/{execution_id}")
async def execution_page(request: Request, execution_id: str) -> Response:
    who = await viewer(request)
    ui = ui_of(request)
    found = _uuid(execution_id)
    try:
        if found is None:
            raise NotFound("execution", execution_id)
        execution = await ui.executions.get(found, who.queues)
    except NotFound:
        return render(request, who, "not_found.html", status=404, what=f"execution {execution_id}")
    attempts = await ui.executions.attempts(found, who.queues)
    logs = await ui.executions.logs(found, MAX_LOGS, None, who.queues)
    level = request.query_params.get("level", "")
    levels = [lv.value for lv in LogLevel]
    shown_levels = levels[levels.index(level):] if level in levels else levels
    entries = [e for e in logs.items if e.level.value in shown_levels]
    state, blockers = await ui.blockers.blockers(found, who.queues)
    signals = await ui.signals.list(found, 100, None, who.queues)
    steps = await ui.dashboard.steps(found, who.queues)
    parents, children = await ui.dashboard.relatives(found, who.queues)
    now = datetime.now(UTC)
    first_start = attempts[0].started_at if attempts else None
    return render(request, who, "execution.html", e=execution, attempts=attempts, logs=entries,
                  more_logs=logs.next_cursor is not None, level=level, levels=levels, blockers=blockers,
                  signals=signals.items, steps=steps, parents=parents, children=children,
                  waited=waited(execution, first_start, now),
                  can_cancel=execution.state in CANCEL_FROM, can_retry=execution.state in MANUAL_RETRY_FROM)


@router.post("/ui/executions/{execution_id}/{action}")
async def act(request: Request, execution_id: str, action: str) -> Response:
    who, fields = await acting(request, Scope.OPERATE)
    page = f"/ui/executions/{execution_id}"
    found = _uuid(execution_id)
    if found is None or action not in ("cancel", "retry"):
        return back(request, "/ui/executions", "No such execution or action.", "error", who)
    executions = ui_of(request).executions
    try:
        done = await (executions.cancel if action == "cancel" else executions.retry)(found, who.queues)
    except JobwireError as exc:
        return back(request, page, str(exc), "error", who)
    verb = "Cancelled" if action == "cancel" else "Retried"
    return back(request, page, f"{verb}: the execution is {done.state.value} now.", viewer=who)
