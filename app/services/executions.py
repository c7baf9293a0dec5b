"""Reading executions (their handlers' logs, attempts and events) and the user's state changes:
cancel, manual retry.

Each use case takes `queues`: those the caller's API key is limited to (None: every queue). An
execution of another queue is NotFound to it, exactly as one that does not exist (its queue is
read before anything else is done with it; an execution's queue never changes), and a listing
shows only the executions of those queues."""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any
from uuid import UUID


from app.db.database import Database
from app.db.executions import ExecutionRepository
from app.db.handlers import HandlerRepository
from app.db.logs import LogRepository
from app.domain.access import may_use
from app.domain.errors import Conflict, FieldError, InvalidTransition, NotFound, ValidationFailed
from app.domain.attempts import Attempt
from app.domain.events import Event
from app.domain.executions import Execution, ListFilter
from app.services import cursors
from app.services.retrying import retry_contention
from app.services.wakeups import wake_for_freed_slots
from app.domain.logs import StoredLog


@dataclass(frozen=True, slots=True)
class Page:
    items: list[Execution]
    next_cursor: str | None


def encode_cursor(execution: Execution) -> str:
    return encode_position(execution.created_at, execution.id)


def decode_cursor(cursor: str) -> tuple[datetime, UUID]:
    """The (created_at, id) an encode_cursor() cursor holds; ValidationFailed naming `cursor` for
    anything else, whatever it decodes to (a dict of two keys, numbers, non-ASCII digits)."""
    *times, id_ = decode_position(cursor, times=1)
    return times[0], id_


def encode_position(*parts: datetime | UUID) -> str:
    """An opaque cursor of times and an id: the JSON list of their texts, base64url."""
    return cursors.encode([p.isoformat() if isinstance(p, datetime) else str(p) for p in parts])


def decode_position(cursor: str, times: int) -> list[Any]:
    """The `times` aware datetimes and the UUID an encode_position() cursor holds; ValidationFailed
    naming `cursor` for anything else."""
    try:
        parts = cursors.decode(cursor)
        if not (isinstance(parts, list) and len(parts) == times + 1
                and all(isinstance(p, str) and p.isascii() for p in parts)):
            raise ValueError(f"not a list of {times + 1} ASCII strings")
        decoded: list[Any] = []
        for text in parts[:times]:
            when = datetime.fromisoformat(text)
            if when.tzinfo is None:
                raise ValueError("naive time")
            when.astimezone(UTC)  # OverflowError when out of range in UTC (asyncpg would fail on it)
            decoded.append(when)
        return [*decoded, UUID(parts[times])]
    except (ValueError, TypeError, OverflowError) as exc:  # binascii.Error, JSONDecodeError: ValueErrors
        raise ValidationFailed([FieldError("cursor", "not a cursor this API issued")]) from exc


def metadata_filter(text: str) -> tuple[str, str]:
    """`key:value` (split on the first `:`) as the listing's metadata filter (key, value);
    ValidationFailed naming `metadata` for text without a `:`, an empty key, or characters a JSON
    document in PostgreSQL cannot hold (NUL, lone surrogates)."""
    key, colon, value = text.partition(":")
    if not colon:
        why = "expected key:value (the value is compared as a JSON string)"
    elif not key:
        why = "the key before `:` is empty"
    elif "\x00" in text or not _encodable(text):
        why = "NUL and lone surrogates cannot be stored in metadata"
    else:
        return key, value
    raise ValidationFailed([FieldError("metadata", why)])


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


@dataclass(frozen=True, slots=True)
class LogPage:
    items: list[StoredLog]
    next_cursor: str | None


def encode_log_cursor(entry: StoredLog) -> str:
    return cursors.encode({"log": entry.id})


def decode_log_cursor(cursor: str) -> int:
    return decode_id_cursor(cursor, "log")


@dataclass(frozen=True, slots=True)
class EventPage:
    items: list[Event]
    next_cursor: str | None


def encode_event_cursor(event: Event) -> str:
    return cursors.encode({"event": event.id})


def decode_event_cursor(cursor: str) -> int:
    return decode_id_cursor(cursor, "event")


def decode_id_cursor(cursor: str, key: str) -> int:
    """The row id a `{key: id}` cursor holds; ValidationFailed naming `cursor` for anything else
    (another kind of cursor, a crafted one: a bool, a float, a negative or 64-bit-overflowing id)."""
    try:
        after = cursors.decode(cursor)[key]
        if not isinstance(after, int) or isinstance(after, bool) or not 0 <= after < 2**63:
            raise ValueError(f"not a {key} id")
        return after
    except (ValueError, TypeError, KeyError) as exc:
        raise ValidationFailed([FieldError("cursor", "not a cursor this API issued")]) from exc


class ExecutionService:
    def __init__(
        self,
        db: Database,
        executions: ExecutionRepository | None = None,
        handlers: HandlerRepository | None = None,
        logs: LogRepository | None = None,
    ) -> None:
        self.db = db
        self.executions = executions or ExecutionRepository()
        self.handlers = handlers or HandlerRepository()
        self.log_repository = logs or LogRepository()

    async def get(self, execution_id: UUID, queues: frozenset[str] | None = None) -> Execution:
        async with self.db.transaction() as conn:
            execution = await self.executions.get(conn, execution_id)
        if execution is None or not _visible(execution, queues):
            raise NotFound("execution", execution_id)
        return execution

    async def require_visible(self, execution_id: UUID, queues: frozenset[str] | None) -> None:
        """NotFound unless the execution exists in one of `queues` (None: in any)."""
        if queues is not None:
            await self.get(execution_id, queues)

    async def list(self, filters: ListFilter, limit: int, cursor: str | None,
                   queues: frozenset[str] | None = None) -> Page:
        """A page of the listing, newest first. ValidationFailed naming `created_after` for an empty
        window (`created_after` not before `created_before`)."""
        if (filters.created_after is not None and filters.created_before is not None
                and filters.created_after >= filters.created_before):
            raise ValidationFailed([FieldError("created_after", "must be before created_before")])
        after = decode_cursor(cursor) if cursor else None
        async with self.db.transaction() as conn:
            if queues is None:
                items = await self.executions.list(conn, filters, limit + 1, after)
            else:
                items = await self._list_in(conn, filters, limit + 1, after, queues)
        more = len(items) > limit
        items = items[:limit]
        return Page(items, encode_cursor(items[-1]) if more and items else None)

    async def logs(self, execution_id: UUID, limit: int, cursor: str | None,
                   queues: frozenset[str] | None = None) -> LogPage:
        """A handler's log entries, oldest (first received) first, `limit` a page."""
        after = decode_log_cursor(cursor) if cursor else 0
        async with self.db.transaction() as conn:
            await self._require_visible(conn, execution_id, queues)
            items = await self.log_repository.page(conn, execution_id, after, limit + 1)
            if not items and await self.executions.get(conn, execution_id) is None:
                raise NotFound("execution", execution_id)
        more = len(items) > limit
        items = items[:limit]
        return LogPage(items, encode_log_cursor(items[-1]) if more and items else None)

    async def cancel(self, execution_id: UUID, queues: frozenset[str] | None = None) -> Execution:
        # Tried again on contention: a job of a workflow may deadlock with a node's outcome batch
        # that ends its parent (app/db/sql/functions/jobwire_workflow_transitions.sql).
        return await retry_contention(lambda: self._cancel(execution_id, queues))

    async def _cancel(self, execution_id: UUID, queues: frozenset[str] | None) -> Execution:
        async with self.db.transaction() as conn:
            await self._require_visible(conn, execution_id, queues)
            execution = await self.executions.cancel(conn, execution_id)
            if execution is None:
                await self._explain_refusal(conn, execution_id, "cancel")
            else:
                # A cancelled PROCESSING execution frees its slot at once, even if the handler has
                # not stopped yet (cooperative cancellation).
                await wake_for_freed_slots(self.db, self.executions, conn, [execution])
        assert execution is not None
        return execution

    async def retry(self, execution_id: UUID, queues: frozenset[str] | None = None) -> Execution:
        async with self.db.transaction() as conn:
            current = await self.executions.get(conn, execution_id)
            if current is None or not _visible(current, queues):
                raise NotFound("execution", execution_id)
            # Held until commit, like an enqueue: a handler being deleted cannot lose this job.
            if not await self.handlers.lock_for_enqueue(conn, [current.handler]):
                raise Conflict(f"handler {current.handler!r} is no longer registered; register it again to retry")
            execution = await self.executions.retry_manually(conn, execution_id)
            if execution is None:
                await self._explain_refusal(conn, execution_id, "retry")
            await self.executions.notify(conn, self.db.notify_channel, execution.queue)  # type: ignore[union-attr]
        assert execution is not None
        return execution

    async def attempts(self, execution_id: UUID, queues: frozenset[str] | None = None) -> list[Attempt]:
        """One item per attempt dispatched, oldest first, the one in flight included."""
        async with self.db.transaction() as conn:
            await self._require_visible(conn, execution_id, queues)
            items = await self.executions.attempts(conn, execution_id)
            if not items and await self.executions.get(conn, execution_id) is None:
                raise NotFound("execution", execution_id)
        return items

    async def events(self, execution_id: UUID, limit: int, cursor: str | None,
                     queues: frozenset[str] | None = None) -> EventPage:
        """The typed transition events (attempt outcomes, user actions), oldest first, `limit` a page."""
        after = decode_event_cursor(cursor) if cursor else 0
        async with self.db.transaction() as conn:
            await self._require_visible(conn, execution_id, queues)
            items = await self.executions.event_page(conn, execution_id, after, limit + 1)
            if not items and await self.executions.get(conn, execution_id) is None:
                raise NotFound("execution", execution_id)
        more = len(items) > limit
        items = items[:limit]
        return EventPage(items, encode_event_cursor(items[-1]) if more and items else None)

    async def _require_visible(self, conn: Any, execution_id: UUID, queues: frozenset[str] | None) -> None:
        if queues is not None:
            current = await self.executions.get(conn, execution_id)
            if current is None or current.queue not in queues:
                raise NotFound("execution", execution_id)

    async def _list_in(self, conn: Any, filters: ListFilter, n: int, after: tuple[datetime, UUID] | None,
                       queues: frozenset[str]) -> list[Execution]:
        """The first `n` executions of the listing narrowed to `queues`: the page of each queue (the
        one the filter names, if it is among them), merged in the listing's order (created_at
        newest first, then id); each queue's page is a statement of the listing as it is."""
        wanted = sorted(queues) if filters.queue is None else [filters.queue] if filters.queue in queues else []
        items: list[Execution] = []
        for queue in wanted:
            items += await self.executions.list(conn, replace(filters, queue=queue), n, after)
        if len(wanted) > 1:
            items.sort(key=lambda e: e.id)
            items.sort(key=lambda e: e.created_at, reverse=True)  # stable: ties stay in id order
        return items[:n]

    async def _explain_refusal(self, conn: Any, execution_id: UUID, operation: str) -> None:
        current = await self.executions.get(conn, execution_id)
        if current is None:
            raise NotFound("execution", execution_id)
        raise InvalidTransition(operation, current.state)


def _visible(execution: Execution, queues: frozenset[str] | None) -> bool:
    return may_use(queues, execution.queue)
