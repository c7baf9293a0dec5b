"""Flow control: per handler its circuit breaker, its adaptive limit and its concurrency keys
(waiting, in flight, rate window, paused), with pause and resume per key, through the services of
the API's /v1/handlers/{name}/keys routes. A key limited to queues sees the circuits but not the
keys: a concurrency key holds jobs of every queue (the API refuses it too)."""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import quote, urlencode

from fastapi import APIRouter
from starlette.requests import Request
from starlette.responses import Response

from app.domain.access import Scope, require_every_queue
from app.domain.errors import Forbidden, JobwireError, NotFound, ValidationFailed
from app.domain.handlers import Handler
from app.domain.keys import KeyState, KeyStatus
from app.ui.access import Refused, viewer
from app.ui.context import ui_of
from app.ui.render import acting, back, first, render

router = APIRouter()
KEYS_SHOWN = 20  # keys per handler on the page of every handler
KEYS_PAGE = 100  # keys per page of one handler's


@dataclass(frozen=True, slots=True)
class HandlerFlow:
    handler: Handler
    keys: list[KeyStatus]
    next_cursor: str | None


def flow_url(handler: str | None = None, state: str | None = None, cursor: str | None = None) -> str:
    query = urlencode([(k, v) for k, v in (("handler", handler), ("state", state), ("cursor", cursor)) if v])
    return "/ui/flow" + (f"?{query}" if query else "")


@router.get("/ui/flow")
async def flow(request: Request) -> Response:
    who = await viewer(request)
    ui = ui_of(request)
    one = request.query_params.get("handler") or None
    state_text = request.query_params.get("state") or ""
    state = KeyState(state_text) if state_text in {s.value for s in KeyState} else None
    cursor = request.query_params.get("cursor") or None
    keys_shown = who.queues is None
    error = None
    try:
        handlers = [await ui.handlers.get(one)] if one else await ui.handlers.list()
    except NotFound:
        return render(request, who, "not_found.html", status=404, what=f"handler {one}")
    flows = []
    for h in handlers:
        keys: list[KeyStatus] = []
        next_cursor = None
        if keys_shown:
            try:
                keys, next_cursor = await ui.keys.page(h.name, state, cursor if one else None,
                                                       KEYS_PAGE if one else KEYS_SHOWN)
            except (NotFound, ValidationFailed) as exc:  # deleted meanwhile, or a cursor no page made
                error = str(exc)
        flows.append(HandlerFlow(h, keys, next_cursor))
    return render(request, who, "flow.html", flows=flows, one=one, state=state.value if state else "",
                  states=[s.value for s in KeyState], keys_shown=keys_shown, first_page=cursor is None,
                  flow_url=flow_url, key_action_url=key_action_url, error=error, back_to=request.url.path + (
                      f"?{request.url.query}" if request.url.query else ""))


@router.post("/ui/flow/{handler}/keys/{key}/{action}")
async def pause_or_resume(request: Request, handler: str, key: str, action: str) -> Response:
    who, fields = await acting(request, Scope.OPERATE)
    try:
        require_every_queue(who.queues, "a handler's concurrency key")
    except Forbidden as exc:
        raise Refused(str(exc)) from None
    to = first(fields, "back") or flow_url(handler)
    if action not in ("pause", "resume"):
        return back(request, to, f"Unknown action {action!r}.", "error", who)
    try:
        await ui_of(request).keys.set_paused(handler, key, action == "pause")
    except JobwireError as exc:
        return back(request, to, str(exc), "error", who)
    done = "paused" if action == "pause" else "resumed"
    return back(request, to, f"Key {key} of {handler} {done}.", viewer=who)


def key_action_url(handler: str, key: str, action: str) -> str:
    return f"/ui/flow/{quote(handler, safe='')}/keys/{quote(key, safe='')}/{action}"
