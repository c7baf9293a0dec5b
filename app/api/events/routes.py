"""GET /v1/events: the feed of every execution's typed transition events."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Request
from starlette.responses import Response

from app.api.auth import ManagementRoute, queues_of, requires
from app.api.events.models import FeedPage
from app.api.executions.views import event_view
from app.api.fields import Name
from app.api.responses import FastJSON, problems
from app.api.services import services_of
from app.domain.access import Scope
from app.domain.errors import FieldError, ValidationFailed
from app.domain.events import EventType
from app.services.events import MAX_FEED_PAGE

router = APIRouter(prefix="/v1/events", tags=["events"], route_class=ManagementRoute)
TYPES = {t.value for t in EventType}


@router.get("", operation_id="listEvents", response_model=FeedPage, responses=problems())
@requires(Scope.READ)
async def list_events(
    request: Request,
    after: Annotated[str | None, Query(max_length=200, description="the previous page's `next_cursor`; omitted: "
                                                                   "from the oldest stored event")] = None,
    limit: Annotated[int, Query(ge=1, le=MAX_FEED_PAGE, description="items per page")] = 100,
    types: Annotated[str | None, Query(
        max_length=1000, description="comma-separated event types, e.g. `execution.succeeded,execution.dead_lettered`")
    ] = None,
    queue: Annotated[Name | None, Query(description="only events of this queue")] = None,
    handler: Annotated[Name | None, Query(description="only events of this handler")] = None,
) -> Response:
    """Every execution's typed transition events (`execution.succeeded`, `.failed`, `.abandoned`,
    `.dead_lettered`, `.cancelled`, `.retried`), the items `GET /v1/executions/{id}/events` lists,
    in the order of (writing transaction, event id). Only the events of transactions older than
    the oldest one still running on the server are served: a client that stores `next_cursor`
    and asks again from it never misses an event, even one whose transaction committed after a
    later-numbered one; the feed lags behind the oldest open write transaction. Within one
    execution, id order is commit order. `next_cursor` is never null: at the end it is where to
    ask again. The feed holds the stored events only (retention removes them); a cursor does not
    survive a dump and restore (pg_upgrade keeps it). A key limited to queues sees their events."""
    wanted = None
    if types is not None:
        wanted = [t.strip() for t in types.split(",") if t.strip()]
        unknown = [t for t in wanted if t not in TYPES]
        if unknown or not wanted:
            raise ValidationFailed([FieldError("types", f"unknown event types {unknown}; known: {sorted(TYPES)}"
                                               if unknown else "names no event type")])
    s = services_of(request)
    page = await s.events.page(after, limit, types=wanted, queue=queue, handler=handler, queues=queues_of(request))
    return FastJSON({"items": [event_view(e) for e in page.items], "next_cursor": page.next_cursor})
