"""Dead letters: the DEAD_LETTER executions by queue and handler, retried or deleted one at a time,
as a selection, or all that match the filter (through the bulk services, repeated while there are
more); each asks first, on a page of its own, with the number of rows it will touch."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import urlencode
from uuid import UUID

from fastapi import APIRouter
from starlette.requests import Request
from starlette.responses import Response

from app.domain.access import Scope
from app.domain.errors import JobwireError, ValidationFailed
from app.domain.executions import ListFilter
from app.domain.states import JobState
from app.services.bulk import MAX_LIMIT, BulkAction, BulkSelection
from app.ui.access import Viewer, viewer
from app.ui.context import UiServices, ui_of
from app.ui.render import acting, back, render
from app.ui.pages.executions import PAGE_SIZE, Filter, given_of

router = APIRouter()
DEAD = JobState.DEAD_LETTER
FILTERS = (Filter("queue", "Queue"), Filter("handler", "Handler"))
ACTIONS = {"retry": BulkAction.RETRY, "delete": BulkAction.DELETE}
MAX_PASSES = 1000  # bulk calls of one "all matching" action at most (MAX_LIMIT rows each)


@dataclass(frozen=True, slots=True)
class Selection:
    """What a dead-letter action is for: the rows picked (`ids`), or every one the filter matches."""

    queue: str | None
    handler: str | None
    ids: tuple[UUID, ...] | None  # None: all matching

    @property
    def bulk(self) -> BulkSelection:
        return BulkSelection(state=DEAD, queue=self.queue, handler=self.handler, ids=self.ids)

    def hidden(self) -> list[tuple[str, str]]:
        """The selection as form fields (the confirm page's POST carries it on)."""
        fields = [(k, v) for k, v in (("queue", self.queue), ("handler", self.handler)) if v]
        return fields + [("ids", str(i)) for i in self.ids or ()] + ([("all", "1")] if self.ids is None else [])

    def list_url(self) -> str:
        """The dead-letter list with this selection's filter."""
        query = urlencode([(k, v) for k, v in (("queue", self.queue), ("handler", self.handler)) if v])
        return "/ui/dead-letters" + (f"?{query}" if query else "")

    def described(self) -> str:
        where = ", ".join(f"{k} {v}" for k, v in (("queue", self.queue), ("handler", self.handler)) if v)
        if self.ids is not None:
            return "the selected dead letters"
        return f"every dead letter{' of ' + where if where else ''}"


def _selection(values: Mapping[str, list[str]]) -> Selection:
    def one(name: str) -> str | None:
        v = (values.get(name) or [""])[0].strip()
        return v or None

    ids: list[UUID] = []
    for text in values.get("ids", []):
        try:
            ids.append(UUID(text))
        except ValueError:
            continue
    everything = one("all") is not None or (values.get("do") or [""])[0].endswith("-all")
    return Selection(one("queue"), one("handler"), None if everything else tuple(dict.fromkeys(ids)))


def _query_values(request: Request) -> dict[str, list[str]]:
    values: dict[str, list[str]] = {}
    for k, v in request.query_params.multi_items():
        values.setdefault(k, []).append(v)
    return values


async def count(ui: UiServices, who: Viewer, selection: Selection, action: str) -> tuple[int, bool]:
    """How many rows the action would touch now, and whether more match than one bulk call takes
    (MAX_LIMIT): a dry run of the bulk service on the same selection, for the same key."""
    result = await ui.bulk.dry_run(ACTIONS[action], selection.bulk, MAX_LIMIT, who.queues)
    return result.matched, result.more


@router.get("/ui/dead-letters")
async def dead_letters(request: Request) -> Response:
    who = await viewer(request)
    given = given_of(request, FILTERS)
    cursor = request.query_params.get("cursor") or None
    filters = ListFilter(state=DEAD.value, **{k: v for k, v in given.items() if v})
    error = None
    try:
        page = await ui_of(request).executions.list(filters, PAGE_SIZE, cursor, who.queues)
        items, next_cursor = page.items, page.next_cursor
    except ValidationFailed as exc:
        items, next_cursor, error = [], None, str(exc)
    return render(request, who, "dead_letters.html", filters=FILTERS, given=given, items=items,
                  next_cursor=next_cursor, first_page=cursor is None, error=error)


@router.get("/ui/dead-letters/confirm")
async def confirm(request: Request) -> Response:
    who = await viewer(request)
    values = _query_values(request)
    action = (values.get("action") or values.get("do") or [""])[0].split("-")[0]
    selection = _selection(values)
    back_to = selection.list_url()
    if action not in ACTIONS:
        return back(request, back_to, "Choose retry or delete.", "error", who)
    if selection.ids == ():
        return back(request, back_to, "Select some rows first.", "error", who)
    n, more = await count(ui_of(request), who, selection, action)
    return render(request, who, "confirm.html", action=action, selection=selection, count=n, more=more,
                  back_to=back_to)


@router.post("/ui/dead-letters/{action}")
async def apply(request: Request, action: str) -> Response:
    who, fields = await acting(request, Scope.OPERATE)
    selection = _selection(fields)
    back_to = selection.list_url()
    if action not in ACTIONS:
        return back(request, back_to, f"Unknown action {action!r}.", "error", who)
    if selection.ids == ():
        return back(request, back_to, "Select some rows first.", "error", who)
    bulk = ui_of(request).bulk
    changed = matched = 0
    cursor = None
    try:
        for _ in range(MAX_PASSES):
            result = await bulk.apply(ACTIONS[action], selection.bulk, MAX_LIMIT, who.queues, cursor)
            changed, matched, cursor = changed + result.changed, matched + result.matched, result.next_cursor
            if cursor is None:
                break
    except JobwireError as exc:
        return back(request, back_to, str(exc), "error", who)
    verb = "Retried" if action == "retry" else "Deleted"
    skipped = f" ({matched - changed} had moved on and were skipped)" if matched > changed else ""
    return back(request, back_to, f"{verb} {changed} execution{'s' if changed != 1 else ''}{skipped}.", viewer=who)
