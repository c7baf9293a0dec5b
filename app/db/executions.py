"""ExecutionRepository: every statement on job_executions (and the events they write).

Repositories never commit: the caller's transaction (Database.transaction) owns the boundary.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any
from uuid import UUID

from app.db.database import Connection
from app.db.queries import EXECUTION_COLUMNS, load
from app.db.rows import attempt_end_from, attempt_from, claimed_from, event_from, execution_from
from app.db.statements import execute, fetch, fetchrow, fetchval, json_param
from app.domain import states
from app.domain.attempts import Attempt, AttemptEnd
from app.domain.dispatch import ClaimedJob
from app.domain.events import Event
from app.domain.executions import Execution, ListFilter, NewJob

Q = load("executions.sql")
EVENTS = load("events.sql")


def job_document(job: NewJob) -> dict[str, Any]:
    """One item of jobwire_enqueue's `jobs` array. Absent keys and JSON nulls take the defaults
    (a payload, parameters or metadata of null is stored as SQL NULL)."""
    doc: dict[str, Any] = {
        "handler": job.handler,
        "queue": job.queue,
        "priority": job.priority,
        "max_attempts": job.max_attempts,
        "stateful": job.stateful,
    }
    optional = {
        "job_id": job.job_id,
        "payload": job.payload,
        "parameters": job.parameters,
        "metadata": job.metadata,
        "run_at": job.run_at.isoformat() if job.run_at else None,
        "delay_seconds": job.delay_seconds,
        "timeout_seconds": job.timeout_seconds,
        "max_duration_seconds": job.max_duration_seconds,
        "idempotency_key": job.idempotency_key,
        "traceparent": job.traceparent,
        "concurrency_key": job.concurrency_key,
    }
    doc.update({k: v for k, v in optional.items() if v is not None})
    return doc


_FILTER_COLUMNS = ("queue", "handler", "idempotency_key", "concurrency_key")
# The listing walks ix_job_executions_state_created (state, created_at DESC, id) once per state,
# newest first, and merges the walks: each state's rows in the listing's order, the first :limit of
# each enough for the first :limit of all. (Revision 20261204_0026 dropped the index of every row
# by (created_at DESC, id): it took an entry at each of a job's row versions, for the listings
# without a state alone.)
_LISTING = ("SELECT e.* FROM unnest(CAST(:states AS text[])) AS s(state)"
            " CROSS JOIN LATERAL (SELECT {columns} FROM job_executions"
            " WHERE state = s.state{where} ORDER BY created_at DESC, id LIMIT :limit) AS e"
            " ORDER BY e.created_at DESC, e.id LIMIT :limit")
_ALL_STATES = [s.value for s in states.JobState]
# A job's executions by job_id. ix_job_executions_job_id_given holds only the executions whose
# job_id is not their own id (revision 20261204_0023: a one-off job's default job_id is its id),
# so its predicate is written beside the filter, where the planner can see the index applies; a
# job_id that reads as an execution's id may also be that one-off execution's, by the primary key.
_JOB_ID_GIVEN = "job_id = :job_id AND job_id <> CAST(id AS text)"
_JOB_ID_GIVEN_OR_OWN = f"({_JOB_ID_GIVEN} OR id = :own_id AND job_id = :job_id)"


def job_id_condition(job_id: str) -> tuple[str, dict[str, Any]]:
    """The condition `job_id = <job_id>` on job_executions as the index can serve it, and its parameters."""
    try:
        parsed = UUID(job_id)
    except ValueError:
        parsed = None
    if parsed is None or str(parsed) != job_id:  # not the text of an id (CAST(id AS text): lower case, hyphens)
        return _JOB_ID_GIVEN, {"job_id": job_id}
    return _JOB_ID_GIVEN_OR_OWN, {"job_id": job_id, "own_id": parsed}


# The metadata filter is a containment, beside the predicate of the partial GIN index
# ix_job_executions_metadata written as it is there: the planner uses a partial index only for a
# query whose WHERE implies its predicate, and a parameter cannot prove `<> '{}'`. It changes no
# answer: a metadata of `{}` (or NULL) contains no key.
_METADATA_FILTER = "metadata @> CAST(:metadata AS jsonb) AND metadata <> '{}'"


class ExecutionRepository:
    async def enqueue(self, conn: Connection, jobs: Sequence[NewJob]) -> list[tuple[Execution, bool]]:
        """Insert jobs through jobwire_enqueue, one statement; per input position the execution and
        whether it was created (False: its idempotency key returned the one stored before, same
        request). Raises ValidationFailed naming `jobs[i].field` for what the function refuses
        (an unregistered handler, a key reused with another request body, …): app.db.errors
        translates the function's refusal when the unit of work ends."""
        rows = await fetch(conn, Q["executions_insert"], jobs=json_param([job_document(j) for j in jobs]))
        return [(execution_from(r), bool(r["created"])) for r in rows]

    async def enqueue_ids(self, conn: Connection, jobs: Sequence[NewJob]) -> list[tuple[UUID, bool]]:
        """As `enqueue`, each execution's id alone (its other columns are not read back)."""
        rows = await fetch(conn, Q["executions_insert_ids"], jobs=json_param([job_document(j) for j in jobs]))
        return [(UUID(r["id"]), bool(r["created"])) for r in rows]

    async def has_idempotency_key(self, conn: Connection, key: str) -> bool:
        return bool(await fetchval(conn, Q["execution_has_idempotency_key"], key=key))

    async def get(self, conn: Connection, execution_id: UUID) -> Execution | None:
        row = await fetchrow(conn, Q["execution_get"], id=execution_id)
        return execution_from(row) if row else None

    async def list(
        self,
        conn: Connection,
        filters: ListFilter,
        limit: int,
        after: tuple[datetime, UUID] | None = None,
    ) -> list[Execution]:
        """Newest first; keyset pagination on (created_at DESC, id) after a previous page's last row.
        Run it in a transaction (a metadata filter sets plan_cache_mode for the transaction)."""
        where, params = [], {"limit": limit, "states": [filters.state] if filters.state else _ALL_STATES}
        for column in _FILTER_COLUMNS:
            value = getattr(filters, column)
            if value is not None:
                where.append(f"{column} = :{column}")
                params[column] = value
        if filters.job_id is not None:
            condition, more = job_id_condition(filters.job_id)
            where.append(condition)
            params.update(more)
        if filters.metadata is not None:
            key, value = filters.metadata
            where.append(_METADATA_FILTER)
            params["metadata"] = json_param({key: value})
            # Planned for its value, in this transaction: a generic plan (which PostgreSQL may
            # settle on for a prepared statement after five runs) made for a common value walks
            # the newest first and filters, which reads the whole table for a rare one.
            await execute(conn, "SET LOCAL plan_cache_mode = force_custom_plan")
        if filters.created_after is not None:
            where.append("created_at >= :created_after")
            params["created_after"] = filters.created_after
        if filters.created_before is not None:
            where.append("created_at < :created_before")
            params["created_before"] = filters.created_before
        if after is not None:
            # The first term repeats what the second implies: an index condition, so a later page
            # starts where the previous one stopped rather than walking the index from the top.
            where.append("created_at <= :after_created"
                         " AND (created_at < :after_created OR (created_at = :after_created AND id > :after_id))")
            params["after_created"], params["after_id"] = after
        sql = _LISTING.format(columns=", ".join(EXECUTION_COLUMNS), where="".join(f" AND {w}" for w in where))
        return [execution_from(r) for r in await fetch(conn, sql, **params)]

    async def claim(
        self,
        conn: Connection,
        node: str,
        n: int,
        queues: Sequence[str],
        default_timeout: float,
    ) -> list[ClaimedJob]:
        """Claim up to n due jobs (of `queues`, or of every queue when empty) in one statement:
        jobwire_claim takes the advisory locks of the stateful-queue and max_concurrency protocol
        and claims in a later statement of its own, whose fresh snapshot sees every earlier lock
        holder's committed claim. Run it on an autocommit connection and the locks end with it."""
        rows = await fetch(conn, Q["executions_claim"], node=node, n=n, default_timeout=float(default_timeout),
                           queues=list(queues) if queues else None)
        return [claimed_from(r) for r in rows]

    async def succeed_attempts(
        self, conn: Connection, items: Sequence[tuple[UUID, int, Any]], channel: str,
        http_statuses: Sequence[int | None] | None = None,
    ) -> list[AttemptEnd]:
        """Record successes (id, attempt, result), each with the attempt it ended; rows that may no
        longer succeed are skipped. One statement, which also NOTIFYs `channel` when a success frees
        a stateful queue or a max_concurrency slot. `http_statuses`, parallel to `items`: the
        handler's status where the success was its synchronous reply (None: a completion
        callback), kept in the event row."""
        rows = await fetch(conn, Q["executions_succeed"], **_succeed_params(items, channel, http_statuses))
        return [attempt_end_from(r) for r in rows]

    async def succeed_quietly(
        self, conn: Connection, items: Sequence[tuple[UUID, int, Any]], channel: str,
        http_statuses: Sequence[int | None] | None = None,
    ) -> int:
        """As succeed_attempts, returning only how many applied (no rows to decode)."""
        row = await fetchrow(conn, Q["executions_succeed_quietly"],
                             **_succeed_params(items, channel, http_statuses))
        return int(row["succeeded"])  # type: ignore[index]

    async def release_refused(self, conn: Connection, items: Sequence[tuple[UUID, int]]) -> list[Execution]:
        """Refused calls (id, attempt) back to ENQUEUED with the same attempt."""
        rows = await fetch(conn, Q["executions_release_refused"], ids=[i for i, _ in items],
                           attempts=[a for _, a in items], from_states=list(states.REFUSED_FROM))
        return [execution_from(r) for r in rows]

    async def release_to_handler(
        self, conn: Connection, node: str, items: Sequence[tuple[UUID, int]]
    ) -> list[UUID]:
        rows = await fetch(conn, Q["executions_release_to_handler"], ids=[i for i, _ in items],
                           attempts=[a for _, a in items], node=node, from_states=[states.JobState.PROCESSING.value])
        return [r["id"] for r in rows]

    async def end_attempt(
        self,
        conn: Connection,
        execution_id: UUID,
        attempt: int,
        *,
        cause: states.JobState,
        error: str,
        error_type: str,
        retryable: bool,
        delay: float,
        at_deadline: bool = False,
        http_status: int | None = None,
    ) -> AttemptEnd | None:
        """A failed (cause FAILED) or abandoned (cause ABANDONED) attempt and its retry, in one
        statement. None when the attempt is no longer current or no longer PROCESSING, or, for
        an abandonment `at_deadline`, when its deadline (database time) has not passed.
        `error` (the attempt's own text, kept in its event row beside last_error) and
        `http_status` (the handler's, None for a connection error or an abandonment)."""
        from_states = states.FAIL_FROM if cause is states.JobState.FAILED else states.ABANDON_FROM
        row = await fetchrow(conn, Q["execution_fail"], id=execution_id, attempt=attempt, cause=cause.value,
                             error=error, error_type=error_type, retryable=retryable, delay=float(delay),
                             at_deadline=at_deadline, from_states=list(from_states), http_status=http_status)
        return attempt_end_from(row) if row else None

    async def fail(
        self, conn: Connection, execution_id: UUID, attempt: int, *, cause: states.JobState, error: str,
        error_type: str, retryable: bool, delay: float, at_deadline: bool = False, http_status: int | None = None,
    ) -> Execution | None:
        """As end_attempt, the execution alone."""
        ended = await self.end_attempt(conn, execution_id, attempt, cause=cause, error=error, error_type=error_type,
                                       retryable=retryable, delay=delay, at_deadline=at_deadline,
                                       http_status=http_status)
        return ended.execution if ended else None

    async def abandon_attempts_held_by(
        self, conn: Connection, nodes: Sequence[str], n: int, *, error: str, error_type: str,
        keep: Sequence[UUID] = (),
    ) -> list[AttemptEnd]:
        """Abandon up to n PROCESSING executions the given nodes hold (but not `keep`), retried at once."""
        rows = await fetch(conn, Q["executions_abandon_held_by"], **self._abandon_params(error, error_type),
                           nodes=list(nodes), keep=list(keep), n=n)
        return [attempt_end_from(r) for r in rows]

    async def release_undispatched(self, conn: Connection, node: str, n: int,
                                   keep: Sequence[UUID]) -> list[Execution]:
        """Up to n PROCESSING executions `node` holds, but not `keep`, back to ENQUEUED with the same
        attempt: claimed, never dispatched."""
        rows = await fetch(conn, Q["executions_release_undispatched"], node=node, n=n, keep=list(keep),
                           from_states=list(states.UNDISPATCHED_FROM))
        return [execution_from(r) for r in rows]

    async def abandon_attempts_past_deadline(self, conn: Connection, n: int, *, error: str,
                                             error_type: str) -> list[AttemptEnd]:
        """Abandon up to n PROCESSING executions whose deadline has passed, retried at once."""
        rows = await fetch(conn, Q["executions_abandon_past_deadline"], **self._abandon_params(error, error_type), n=n)
        return [attempt_end_from(r) for r in rows]

    @staticmethod
    def _abandon_params(error: str, error_type: str) -> dict[str, Any]:
        # Abandoning is not the job's fault: the next attempt is due at once (no backoff). No
        # reply came: no HTTP status.
        return {"cause": states.JobState.ABANDONED.value, "error": error, "error_type": error_type,
                "delay": 0.0, "from_states": list(states.ABANDON_FROM), "http_status": None}

    async def seconds_to_next_deadline(self, conn: Connection) -> float | None:
        return await fetchval(conn, Q["executions_next_deadline"])

    async def seconds_to_next_rate_slot(self, conn: Connection) -> float | None:
        return await fetchval(conn, Q["executions_next_rate_slot"])

    async def seconds_left(self, conn: Connection, execution_id: UUID, attempt: int) -> float | None:
        """Seconds until the attempt's deadline (negative once past); None when it is no longer
        PROCESSING at that attempt."""
        return await fetchval(conn, Q["execution_seconds_left"], id=execution_id, attempt=attempt)

    async def extend_deadline(
        self, conn: Connection, execution_id: UUID, attempt: int, *, default_timeout: float,
        progress: dict[str, Any] | None = None,
    ) -> bool:
        """Move the deadline of the current attempt (and merge a progress snapshot); False when
        the execution is no longer PROCESSING at that attempt."""
        row = await fetchrow(conn, Q["execution_extend_deadline"], id=execution_id, attempt=attempt,
                             default_timeout=float(default_timeout),
                             progress=json_param(progress) if progress else None)
        return row is not None

    async def cancel(self, conn: Connection, execution_id: UUID) -> Execution | None:
        return await self._transition(conn, "execution_cancel", execution_id, states.CANCEL_FROM)

    async def retry_manually(self, conn: Connection, execution_id: UUID) -> Execution | None:
        return await self._transition(conn, "execution_retry_manually", execution_id, states.MANUAL_RETRY_FROM)

    async def _transition(
        self, conn: Connection, name: str, execution_id: UUID, from_states: Sequence[str]
    ) -> Execution | None:
        row = await fetchrow(conn, Q[name], id=execution_id, from_states=list(from_states))
        return execution_from(row) if row else None

    async def events(self, conn: Connection, execution_id: UUID) -> list[dict[str, Any]]:
        """Every event row's curated event (with its row id), typed or not, oldest first."""
        rows = await fetch(conn, Q["events_for_execution"], id=execution_id)
        return [dict(r["event"], id=r["id"]) for r in rows]

    async def event_page(self, conn: Connection, execution_id: UUID, after: int, limit: int) -> list[Event]:
        """The typed events (attempt outcomes, user actions), oldest first, after event id `after`."""
        rows = await fetch(conn, EVENTS["execution_events_page"], id=execution_id, after=after, limit=limit)
        return [event_from(r) for r in rows]

    async def attempts(self, conn: Connection, execution_id: UUID) -> list[Attempt]:
        """One per attempt dispatched, oldest first, the one in flight included (executions.sql
        execution_attempts says how they are derived)."""
        return [attempt_from(r) for r in await fetch(conn, Q["execution_attempts"], id=execution_id)]

    async def notify(self, conn: Connection, channel: str, queue: str = "") -> None:
        await execute(conn, Q["notify"], channel=channel, queue=queue)

    async def notify_if_limited(self, conn: Connection, channel: str, handlers: Sequence[str]) -> None:
        await execute(conn, Q["notify_if_limited"], channel=channel, handlers=list(handlers))


def _succeed_params(items: Sequence[tuple[UUID, int, Any]], channel: str,
                    http_statuses: Sequence[int | None] | None = None) -> dict[str, Any]:
    """executions_succeed's batch as parallel arrays (results as JSON text)."""
    if http_statuses is None:
        http_statuses = [None] * len(items)
    elif len(http_statuses) != len(items):
        raise ValueError("http_statuses must be parallel to items")
    return {"ids": [i for i, _, _ in items], "attempts": [a for _, a, _ in items],
            "results": [None if r is None else json_param(r) for _, _, r in items],
            "http_statuses": list(http_statuses), "from_states": list(states.SUCCEED_FROM), "channel": channel}
