"""EventRepository: the feed of typed transition events (GET /v1/events)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from app.db.database import Connection
from app.db.queries import load
from app.db.rows import event_from
from app.db.statements import fetch
from app.domain.events import Event

Q = load("events.sql")


@dataclass(frozen=True, slots=True)
class FeedRow:
    event: Event
    xact: int  # the writing transaction's id: the first half of its feed position


class EventRepository:
    async def feed(self, conn: Connection, after: tuple[int, int], limit: int, *, types: Sequence[str] | None,
                   queue: str | None, handler: str | None, queues: frozenset[str] | None) -> list[FeedRow]:
        rows = await fetch(conn, Q["events_feed"], xact=after[0], id=after[1], limit=limit,
                           types=None if types is None else list(types), queue=queue, handler=handler,
                           queues=None if queues is None else sorted(queues))
        return [FeedRow(event_from(r), r["xact"]) for r in rows]
