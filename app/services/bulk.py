"""Bulk actions: retry, cancel or delete the executions matching a selection.

Not atomic, and safe to repeat. The matching rows are selected first (oldest first, up to
`limit`, among those the action can change: cancel ENQUEUED and PROCESSING, retry DEAD_LETTER and
CANCELLED of handlers still registered, delete any other state), then changed in transactions of
at most BATCH_SIZE rows through the same guarded writes as the single routes. A row that moved
meanwhile (finished, claimed, cancelled by someone else; for a retry, its handler deleted) is
skipped, not an error: `changed` counts the writes that applied, `skipped` the rows selected that
were not changed. Changed and skipped rows have left the selection, and a row the action cannot
change never enters it (a retry of a deleted handler's rows would otherwise be selected first by
every call, forever), so every call makes progress.

A repetition is one pass, and ends: a call that leaves rows matching answers `next_cursor`, which
the next call sends. The cursor holds the first call's time (`as_of`: executions created later are
not taken, so a cancel by queue does not chase the jobs clients keep enqueueing) and the last row
taken (the next call starts after it, so a retried job that dead-letters again at once is not
taken twice).

A dry run (`dry_run`) makes the same selection and changes nothing: `matched` is the number of
rows the call would take now (at most `limit`, so its cost is bounded as the call's is; `more` says
further rows match), what the call's `matched` is if nothing moves in between.

A caller whose API key is limited to queues (`queues`) acts on those queues' executions only: the
selection is narrowed to them (a `queue` filter naming another matches nothing).

Each batch takes its rows' locks in id order, the order of every other batch write (the
dispatcher's outcomes, the coordinator's scans), so it waits for them rather than deadlocks.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from enum import StrEnum
from functools import partial
from uuid import UUID

from app.db.database import Database
from app.db.executions import ExecutionRepository
from app.db.handlers import HandlerRepository
from app.db.bulk import BulkRepository
from app.db.purge import PurgeRepository
from app.domain import states
from app.domain.errors import FieldError, ValidationFailed
from app.domain.executions import ListFilter
from app.domain.states import JobState
from app.services.executions import decode_position, encode_position
from app.services.retrying import retry_contention
from app.services.wakeups import wake_for_freed_slots

BATCH_SIZE = 500  # rows per transaction
MAX_LIMIT = 10_000  # rows per call, and ids per selection


class BulkAction(StrEnum):
    RETRY = "retry"
    CANCEL = "cancel"
    DELETE = "delete"


# The states each action changes (DESIGN §2): those of the single routes' guarded writes.
ACTION_STATES: dict[BulkAction, tuple[JobState, ...]] = {
    BulkAction.RETRY: tuple(states.MANUAL_RETRY_FROM),
    BulkAction.CANCEL: tuple(states.CANCEL_FROM),
    BulkAction.DELETE: tuple(states.PURGE_FROM),
}


@dataclass(frozen=True, slots=True)
class BulkSelection:
    """Every filter given must match (at least one is required); `ids` None means any id."""

    state: JobState | None = None
    queue: str | None = None
    handler: str | None = None
    job_id: str | None = None
    ids: tuple[UUID, ...] | None = None

    def is_empty(self) -> bool:
        return all(v is None for v in (self.state, self.queue, self.handler, self.job_id, self.ids))


@dataclass(frozen=True, slots=True)
class BulkResult:
    matched: int  # rows selected (at most the limit)
    changed: int  # writes that applied
    next_cursor: str | None  # further rows match beyond the limit: where the next call starts

    @property
    def more(self) -> bool:
        return self.next_cursor is not None

    @property
    def skipped(self) -> int:
        """Rows selected that the action did not change (they moved meanwhile)."""
        return self.matched - self.changed


@dataclass(frozen=True, slots=True)
class BulkDryRun:
    matched: int  # rows the call would select now (at most the limit)
    more: bool  # further rows match beyond the limit


class BulkService:
    def __init__(self, db: Database, executions: ExecutionRepository | None = None,
                 handlers: HandlerRepository | None = None, selections: BulkRepository | None = None,
                 purges: PurgeRepository | None = None,
                 batch_size: int = BATCH_SIZE) -> None:
        self.db = db
        self.executions = executions or ExecutionRepository()
        self.handlers = handlers or HandlerRepository()
        self.selections = selections or BulkRepository()
        self.purges = purges or PurgeRepository()
        self.batch_size = batch_size

    async def apply(self, action: BulkAction, selection: BulkSelection, limit: int = MAX_LIMIT,
                    queues: frozenset[str] | None = None, cursor: str | None = None) -> BulkResult:
        """`queues`: those the caller's key is limited to (None: every queue); `cursor`: the previous
        call's `next_cursor` (None: a first call)."""
        rows, next_cursor = await self._select(action, selection, limit, queues, cursor)
        apply = {BulkAction.RETRY: self._retry, BulkAction.CANCEL: self._cancel,
                 BulkAction.DELETE: self._delete}[action]
        changed = 0
        for start in range(0, len(rows), self.batch_size):
            # Locked in id order (see the module's docstring); batches still go oldest first.
            batch = sorted(rows[start:start + self.batch_size])
            changed += await retry_contention(partial(apply, batch))
        return BulkResult(matched=len(rows), changed=changed, next_cursor=next_cursor)

    async def dry_run(self, action: BulkAction, selection: BulkSelection, limit: int = MAX_LIMIT,
                      queues: frozenset[str] | None = None, cursor: str | None = None) -> BulkDryRun:
        """A dry run of apply() with the same arguments: the rows it would select now, changing
        nothing."""
        rows, next_cursor = await self._select(action, selection, limit, queues, cursor)
        return BulkDryRun(matched=len(rows), more=next_cursor is not None)

    async def _select(self, action: BulkAction, selection: BulkSelection, limit: int,
                      queues: frozenset[str] | None, cursor: str | None) -> tuple[list[tuple[UUID, str]], str | None]:
        if selection.is_empty():
            raise ValidationFailed([FieldError("body", "give at least one of state, queue, handler, job_id, ids")])
        if not 1 <= limit <= MAX_LIMIT:
            raise ValidationFailed([FieldError("limit", f"must be 1..{MAX_LIMIT}")])
        if selection.ids is not None and len(selection.ids) > MAX_LIMIT:
            raise ValidationFailed([FieldError("ids", f"at most {MAX_LIMIT} ids")])
        allowed = ACTION_STATES[action]
        if selection.state is not None and selection.state not in allowed:
            names = " or ".join(s.value for s in allowed)
            raise ValidationFailed([FieldError("state", f"bulk-{action.value} changes only {names} executions")])
        wanted = allowed if selection.state is None else (selection.state,)
        as_of, *after = (None, None, None) if cursor is None else decode_position(cursor, times=2)
        filters = ListFilter(queue=selection.queue, handler=selection.handler, job_id=selection.job_id)
        narrowed = None
        if queues is not None:
            narrowed = _narrowed(selection.queue, queues)
            if len(narrowed) == 1:
                filters, narrowed = replace(filters, queue=narrowed[0]), None
        ids = None if selection.ids is None else sorted(set(selection.ids))
        async with self.db.autocommit() as conn:
            as_of = as_of or await self.selections.as_of(conn)
            rows = [] if narrowed == [] else await self.selections.select(
                conn, wanted, filters, ids, limit + 1, as_of=as_of, after=None if cursor is None else tuple(after),
                queues=narrowed, registered_handlers=action is BulkAction.RETRY)
        next_cursor = None
        if len(rows) > limit:
            last_id, _, last_created = rows[limit - 1]
            next_cursor = encode_position(as_of, last_created, last_id)
        return [(id_, handler) for id_, handler, _ in rows[:limit]], next_cursor

    async def _cancel(self, batch: Sequence[tuple[UUID, str]]) -> int:
        async with self.db.transaction() as conn:
            done = [await self.executions.cancel(conn, execution_id) for execution_id, _ in batch]
            # As the single cancel: a cancelled PROCESSING execution frees its slot at once.
            await wake_for_freed_slots(self.db, self.executions, conn, done)
        return sum(e is not None for e in done)

    async def _retry(self, batch: Sequence[tuple[UUID, str]]) -> int:
        async with self.db.transaction() as conn:
            # As the single retry: the handlers are held until commit, so a handler being deleted
            # cannot lose these jobs; an execution whose handler was deleted since the selection
            # is skipped (and not selected again).
            present = await self.handlers.lock_for_enqueue(conn, sorted({h for _, h in batch}))
            changed = 0
            for execution_id, handler in batch:
                if handler in present:
                    changed += await self.executions.retry_manually(conn, execution_id) is not None
            if changed:
                await self.executions.notify(conn, self.db.notify_channel)  # once per batch, on commit
        return changed

    async def _delete(self, batch: Sequence[tuple[UUID, str]]) -> int:
        async with self.db.transaction() as conn:
            return len(await self.purges.delete(conn, [execution_id for execution_id, _ in batch]))


def _narrowed(queue: str | None, queues: frozenset[str]) -> list[str]:
    """The queues a selection covers for a key limited to `queues`: the one it names if the key
    may use it (else none), or all of the key's."""
    if queue is not None:
        return [queue] if queue in queues else []
    return sorted(queues)
