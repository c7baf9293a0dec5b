"""GET /v1/events: the feed of every execution's typed transition events; GET /v1/events/stream:
the same as server-sent events (app/api/events/stream.py)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Header, Query, Request
from starlette.responses import Response

from app.api.auth import ManagementRoute, queues_of, requires
from app.api.draining import draining
from app.api.events.models import FeedPage
from app.api.events.stream import stream_response
from app.api.executions.views import event_view
from app.api.fields import Name
from app.api.responses import FastJSON, problem, problems
from app.api.services import services_of
from app.domain.access import Scope
from app.domain.errors import FieldError, ValidationFailed
from app.domain.events import EventType
from app.services.events import MAX_FEED_PAGE, decode_feed_cursor

router = APIRouter(prefix="/v1/events", tags=["events"], route_class=ManagementRoute)
TYPES = {t.value for t in EventType}

AFTER_DOC = "the previous page's `next_cursor`; omitted: from the oldest stored event"
TYPES_DOC = "comma-separated event types, e.g. `execution.succeeded,execution.dead_lettered`"
STREAM_FORMAT = (
    "Server-sent events (`text/event-stream`), without end. Each event of the feed is one message: `id:` the "
    "cursor right after the event, `event:` its type (e.g. `execution.succeeded`), `data:` the item `GET /v1/events` "
    "gives (`{id, type, occurred_at, data}`) as one line of JSON, then an empty line. While no event comes, a "
    "comment line (`: keepalive`) is sent at least every 15 seconds. The stream ends (cleanly) when the node shuts "
    "down, when the API key is deleted (within 5 seconds), or when the database cannot be read: reconnect with the "
    "last `id` received as `Last-Event-ID`.")
STREAM_EXAMPLE = (
    'id: eyJmZWVkIjpbNzQ2LDEyXX0\nevent: execution.succeeded\ndata: {"id":12,"type":"execution.succeeded",'
    '"occurred_at":"2026-12-01T12:00:00.250Z","data":{"execution_id":"5f0c2a9e-3b1d-4c7e-9a8b-2d6f1e0c4b7a",'
    '"job_id":"resize-42","job_type":"DELAYED","queue":"default","handler":"resize","new_state":"SUCCEEDED",'
    '"attempt":1,"max_attempts":3,"error_type":null,"scheduled_at":"2026-12-01T12:00:00Z",'
    '"created_at":"2026-12-01T12:00:00Z","started_at":"2026-12-01T12:00:00.120Z",'
    '"completed_at":"2026-12-01T12:00:00.250Z","metadata":null}}\n\n'
    ': keepalive\n\n')


@router.get("", operation_id="listEvents", response_model=FeedPage, responses=problems())
@requires(Scope.READ)
async def list_events(
    request: Request,
    after: Annotated[str | None, Query(max_length=200, description=AFTER_DOC)] = None,
    limit: Annotated[int, Query(ge=1, le=MAX_FEED_PAGE, description="items per page")] = 100,
    types: Annotated[str | None, Query(max_length=1000, description=TYPES_DOC)] = None,
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
    s = services_of(request)
    page = await s.events.page(after, limit, types=event_types(types), queue=queue, handler=handler,
                               queues=queues_of(request))
    return FastJSON({"items": [event_view(e) for e in page.items], "next_cursor": page.next_cursor})


@router.get("/stream", operation_id="streamEvents", response_class=Response, responses={
    200: {"description": STREAM_FORMAT,
          "content": {"text/event-stream": {"schema": {"type": "string"}, "example": STREAM_EXAMPLE}}}})
@requires(Scope.READ)
async def stream_events(
    request: Request,
    after: Annotated[str | None, Query(max_length=200, description=(
        "a cursor (a page's `next_cursor`, or a message's `id`); omitted: from the oldest stored event. "
        "`Last-Event-ID`, when sent, is the position instead"))] = None,
    types: Annotated[str | None, Query(max_length=1000, description=TYPES_DOC)] = None,
    queue: Annotated[Name | None, Query(description="only events of this queue")] = None,
    handler: Annotated[Name | None, Query(description="only events of this handler")] = None,
    last_event_id: Annotated[str | None, Header(alias="Last-Event-ID", max_length=200, description=(
        "the `id` of the last message received: the stream resumes right after it (what a browser's "
        "EventSource sends when it reconnects); wins over `after`"))] = None,
) -> Response:
    """The feed of `GET /v1/events` as server-sent events: the same events in the same order,
    the same filters, without end: each event as it is served (within a second of its commit
    while the feed is idle). Each message's `id` is the cursor right after its event: reconnect
    with it as `Last-Event-ID` (or `after`) and the stream resumes with exactly the events after
    it, none missed and none twice. A key limited to queues sees their events; a key deleted while
    its stream is open has the stream ended within 5 seconds. A node that is shutting down ends
    its streams and answers 503."""
    wanted = event_types(types)
    position = last_event_id or after
    if position:
        decode_feed_cursor(position, "Last-Event-ID" if last_event_id else "after")
    stopping = draining(request.app)
    if stopping.is_set():
        return problem(503, "this node is shutting down; connect again (another node serves the stream too)",
                       headers={"retry-after": "1"})
    return stream_response(request, services_of(request).events, position or None, wanted, queue, handler,
                           stopping)


def event_types(types: str | None) -> list[str] | None:
    """The `types` filter as a list (None: every type); ValidationFailed naming it for a type
    that does not exist, or for none at all."""
    if types is None:
        return None
    wanted = [t.strip() for t in types.split(",") if t.strip()]
    unknown = [t for t in wanted if t not in TYPES]
    if unknown or not wanted:
        raise ValidationFailed([FieldError("types", f"unknown event types {unknown}; known: {sorted(TYPES)}"
                                           if unknown else "names no event type")])
    return wanted
