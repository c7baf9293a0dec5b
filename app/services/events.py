"""The feed of typed transition events (GET /v1/events, and its stream GET /v1/events/stream):
every execution's, in the order they committed as far as a reader can tell, resumable from a
cursor without a gap."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from app.db.database import Database
from app.db.events import EventRepository
from app.domain.errors import FieldError, ValidationFailed
from app.domain.events import Event
from app.services import cursors

MAX_FEED_PAGE = 1000


def encode_feed_cursor(xact: int, event_id: int) -> str:
    return cursors.encode({"feed": [xact, event_id]})


def decode_feed_cursor(cursor: str, name: str = "after") -> tuple[int, int]:
    """The (transaction, event id) position a feed cursor holds; ValidationFailed naming `name`
    (the parameter or header that carried it) for anything else."""
    try:
        xact, event_id = cursors.decode(cursor)["feed"]
        if all(isinstance(v, int) and not isinstance(v, bool) and 0 <= v < 2**63 for v in (xact, event_id)):
            return xact, event_id
    except (ValueError, KeyError, TypeError):
        pass
    raise ValidationFailed([FieldError(name, "is not a cursor the event feed returned")])


@dataclass(frozen=True, slots=True)
class FeedPage:
    items: list[Event]
    next_cursor: str  # never None: at the end, where to ask again
    positions: list[tuple[int, int]] = field(default_factory=list)  # each item's (transaction, id)

    def cursor_after(self, index: int) -> str:
        """The cursor that resumes right after items[index] (the event stream's SSE id); the
        last item's is next_cursor."""
        return encode_feed_cursor(*self.positions[index])


class EventFeedService:
    def __init__(self, db: Database, events: EventRepository | None = None) -> None:
        self.db = db
        self.events = events or EventRepository()

    async def page(self, after: str | None, limit: int, *, types: Sequence[str] | None = None,
                   queue: str | None = None, handler: str | None = None,
                   queues: frozenset[str] | None = None) -> FeedPage:
        """Up to `limit` events after the cursor (None: from the oldest stored), of `types`,
        `queue` and `handler` when given, and of `queues` for a key limited to them."""
        position = decode_feed_cursor(after) if after else (0, 0)
        async with self.db.autocommit() as conn:
            rows = await self.events.feed(conn, position, limit, types=types, queue=queue, handler=handler,
                                          queues=queues)
        positions = [(r.xact, r.event.id) for r in rows]
        return FeedPage([r.event for r in rows], encode_feed_cursor(*(positions[-1] if rows else position)),
                        positions)
