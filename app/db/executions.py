"""ExecutionRepository: every statement on job_executions (and the events they write).

Repositories never commit: the caller's transaction (Database.transaction) owns the boundary.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any
from uuid import UUID

import orjson
from sqlalchemy import bindparam, text
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.dialects.postgresql import UUID as UUID_TYPE
from sqlalchemy.ext.asyncio import AsyncConnection
from sqlalchemy.types import Text

from app.db.queries import EXECUTION_COLUMNS, load
from app.db.raw import RawStatement, fetch
from app.db.rows import claimed_from, execution_from, to_execution
from app.domain import states
from app.domain.errors import FieldError, ValidationFailed
from app.domain.executions import ClaimedJob, Execution, ListFilter, NewJob

Q = load("executions.sql")
# What every job runs, straight through asyncpg on an autocommit connection (app/db/raw.py).
ENQUEUE = RawStatement(Q["executions_insert"])
CLAIM = RawStatement(Q["executions_claim"])


def _with_states(stmt: Any) -> Any:
    return stmt.bindparams(bindparam("from_states", type_=ARRAY(Text)))


SUCCEED = RawStatement(_with_states(Q["executions_succeed"]))
SUCCEED_QUIETLY = RawStatement(_with_states(Q["executions_succeed_quietly"]))
RELEASE_TO_HANDLER = RawStatement(_with_states(Q["executions_release_to_handler"]))


def _json(value: Any) -> str:
    return orjson.dumps(value).decode()


def _job_document(job: NewJob) -> dict[str, Any]:
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
    }
    doc.update({k: v for k, v in optional.items() if v is not None})
    return doc


def _enqueue_refusal(exc: Exception) -> ValidationFailed | None:
    """jobwire_enqueue's refusal (SQLSTATE 22023, CONSTRAINT jobwire_enqueue, the fields at fault
    as JSON in DETAIL) as the domain's ValidationFailed; None for any other error. The driver's
    error comes as it is (app/db/raw.py) or wrapped by SQLAlchemy."""
    orig = getattr(exc, "orig", None)
    for candidate in (exc, orig, getattr(orig, "__cause__", None)):
        if getattr(candidate, "constraint_name", None) == "jobwire_enqueue":
            try:
                errors = orjson.loads(candidate.detail)  # type: ignore[union-attr]
            except (TypeError, orjson.JSONDecodeError):
                return ValidationFailed([FieldError("jobs", str(candidate))])
            return ValidationFailed([FieldError(e["field"], e["message"]) for e in errors])
    return None


_FILTER_COLUMNS = ("state", "queue", "handler", "job_id")


class ExecutionRepository:
    async def enqueue(self, conn: AsyncConnection, jobs: Sequence[NewJob]) -> list[tuple[Execution, bool]]:
        """Insert jobs through jobwire_enqueue, one statement; per input position the execution and
        whether it was created (False: its idempotency key returned the one stored before, same
        request). Raises ValidationFailed naming `jobs[i].field` for what the function refuses
        (an unregistered handler, a key reused with another request body, …)."""
        try:
            rows = await fetch(conn, ENQUEUE, {"jobs": _json([_job_document(j) for j in jobs])})
        except Exception as exc:
            refusal = _enqueue_refusal(exc)
            if refusal is None:
                raise
            raise refusal from None
        return [(execution_from(r), bool(r["created"])) for r in rows]

    async def insert_many(self, conn: AsyncConnection, jobs: Sequence[NewJob]) -> list[Execution | None]:
        """As enqueue; per input position the new execution, or None where an idempotency key
        returned one stored before."""
        return [execution if created else None for execution, created in await self.enqueue(conn, jobs)]

    async def by_idempotency_keys(
        self, conn: AsyncConnection, keys: Sequence[str]
    ) -> dict[str, tuple[Execution, str | None]]:
        stmt = Q["executions_get_by_idempotency_keys"].bindparams(bindparam("keys", type_=ARRAY(Text)))
        rows = await conn.execute(stmt, {"keys": list(keys)})
        return {r._mapping["idempotency_key"]: (to_execution(r), r._mapping["request_hash"]) for r in rows}

    async def get(self, conn: AsyncConnection, execution_id: UUID) -> Execution | None:
        row = (await conn.execute(Q["execution_get"], {"id": execution_id})).first()
        return to_execution(row) if row else None

    async def list(
        self,
        conn: AsyncConnection,
        filters: ListFilter,
        limit: int,
        after: tuple[datetime, UUID] | None = None,
    ) -> list[Execution]:
        """Newest first; keyset pagination on (created_at DESC, id) after a previous page's last row."""
        where, params = [], {"limit": limit}
        for column in _FILTER_COLUMNS:
            value = getattr(filters, column)
            if value is not None:
                where.append(f"{column} = :{column}")
                params[column] = value
        if after is not None:
            where.append("(created_at < :after_created OR (created_at = :after_created AND id > :after_id))")
            params["after_created"], params["after_id"] = after
        sql = (
            f"SELECT {', '.join(EXECUTION_COLUMNS)} FROM job_executions"
            + (f" WHERE {' AND '.join(where)}" if where else "")
            + " ORDER BY created_at DESC, id LIMIT :limit"
        )
        return [to_execution(r) for r in await conn.execute(text(sql), params)]

    async def claim(
        self,
        conn: AsyncConnection,
        node: str,
        n: int,
        queues: Sequence[str],
        default_timeout: float,
    ) -> list[ClaimedJob]:
        """Claim up to n due jobs (of `queues`, or of every queue when empty) in one statement:
        jobwire_claim takes the advisory locks of the stateful-queue and max_concurrency protocol
        and claims in a later statement of its own, whose fresh snapshot sees every earlier lock
        holder's committed claim. Run it on an autocommit connection and the locks end with it."""
        params = {"node": node, "n": n, "default_timeout": float(default_timeout),
                  "queues": list(queues) if queues else None}
        return [claimed_from(r) for r in await fetch(conn, CLAIM, params)]

    async def succeed_many(
        self, conn: AsyncConnection, items: Sequence[tuple[UUID, int, Any]], channel: str
    ) -> list[Execution]:
        """Record successes (id, attempt, result); rows that may no longer succeed are skipped.
        One statement, which also NOTIFYs `channel` when a success frees a stateful queue or a
        max_concurrency slot."""
        return [execution_from(r) for r in await fetch(conn, SUCCEED, _succeed_params(items, channel))]

    async def succeed_quietly(
        self, conn: AsyncConnection, items: Sequence[tuple[UUID, int, Any]], channel: str
    ) -> int:
        """As succeed_many, returning only how many applied (no rows to decode)."""
        [row] = await fetch(conn, SUCCEED_QUIETLY, _succeed_params(items, channel))
        return int(row["succeeded"])

    async def release_to_handler(
        self, conn: AsyncConnection, node: str, items: Sequence[tuple[UUID, int]]
    ) -> list[UUID]:
        rows = await fetch(conn, RELEASE_TO_HANDLER,
                           {"ids": [i for i, _ in items], "attempts": [a for _, a in items], "node": node,
                            "from_states": [states.JobState.PROCESSING.value]})
        return [r["id"] for r in rows]

    async def fail(
        self,
        conn: AsyncConnection,
        execution_id: UUID,
        attempt: int,
        *,
        cause: states.JobState,
        error: str,
        error_type: str,
        retryable: bool,
        delay: float,
        at_deadline: bool = False,
    ) -> Execution | None:
        """A failed (cause FAILED) or abandoned (cause ABANDONED) attempt and its retry, in one
        statement. None when the attempt is no longer current or no longer PROCESSING, or, for
        an abandonment `at_deadline`, when its deadline (database time) has not passed."""
        from_states = states.FAIL_FROM if cause is states.JobState.FAILED else states.ABANDON_FROM
        row = (
            await conn.execute(
                _with_states(Q["execution_fail"]),
                {
                    "id": execution_id,
                    "attempt": attempt,
                    "cause": cause.value,
                    "error": error,
                    "error_type": error_type,
                    "retryable": retryable,
                    "delay": float(delay),
                    "at_deadline": at_deadline,
                    "from_states": list(from_states),
                },
            )
        ).first()
        return to_execution(row) if row else None

    async def abandon_held_by(
        self, conn: AsyncConnection, nodes: Sequence[str], n: int, *, error: str, error_type: str,
        keep: Sequence[UUID] = (),
    ) -> list[Execution]:
        """Abandon up to n PROCESSING executions the given nodes hold (but not `keep`), retried at once."""
        params = self._abandon_params(error, error_type)
        stmt = _with_states(Q["executions_abandon_held_by"]).bindparams(
            bindparam("nodes", type_=ARRAY(Text)), bindparam("keep", type_=ARRAY(UUID_TYPE)))
        rows = await conn.execute(stmt, {**params, "nodes": list(nodes), "keep": list(keep), "n": n})
        return [to_execution(r) for r in rows]

    async def release_undispatched(self, conn: AsyncConnection, node: str, n: int,
                                   keep: Sequence[UUID]) -> list[Execution]:
        """Up to n PROCESSING executions `node` holds, but not `keep`, back to ENQUEUED with the same
        attempt: claimed, never dispatched."""
        stmt = _with_states(Q["executions_release_undispatched"]).bindparams(bindparam("keep", type_=ARRAY(UUID_TYPE)))
        rows = await conn.execute(stmt, {"node": node, "n": n, "keep": list(keep),
                                         "from_states": list(states.UNDISPATCHED_FROM)})
        return [to_execution(r) for r in rows]

    async def abandon_past_deadline(self, conn: AsyncConnection, n: int, *, error: str,
                                    error_type: str) -> list[Execution]:
        """Abandon up to n PROCESSING executions whose deadline has passed, retried at once."""
        params = self._abandon_params(error, error_type)
        rows = await conn.execute(_with_states(Q["executions_abandon_past_deadline"]), {**params, "n": n})
        return [to_execution(r) for r in rows]

    @staticmethod
    def _abandon_params(error: str, error_type: str) -> dict[str, Any]:
        # Abandoning is not the job's fault: the next attempt is due at once (no backoff).
        return {"cause": states.JobState.ABANDONED.value, "error": error, "error_type": error_type,
                "delay": 0.0, "from_states": list(states.ABANDON_FROM)}

    async def seconds_to_next_deadline(self, conn: AsyncConnection) -> float | None:
        return (await conn.execute(Q["executions_next_deadline"])).scalar_one()

    async def seconds_left(self, conn: AsyncConnection, execution_id: UUID, attempt: int) -> float | None:
        """Seconds until the attempt's deadline (negative once past); None when it is no longer
        PROCESSING at that attempt."""
        return (await conn.execute(Q["execution_seconds_left"], {"id": execution_id, "attempt": attempt})).scalar()

    async def extend_deadline(
        self, conn: AsyncConnection, execution_id: UUID, attempt: int, *, default_timeout: float,
        progress: dict[str, Any] | None = None,
    ) -> bool:
        """Move the deadline of the current attempt (and merge a progress snapshot); False when
        the execution is no longer PROCESSING at that attempt."""
        row = (await conn.execute(Q["execution_extend_deadline"], {
            "id": execution_id, "attempt": attempt, "default_timeout": float(default_timeout),
            "progress": _json(progress) if progress else None,
        })).first()
        return row is not None

    async def cancel(self, conn: AsyncConnection, execution_id: UUID) -> Execution | None:
        return await self._transition(conn, "execution_cancel", execution_id, states.CANCEL_FROM)

    async def retry_manually(self, conn: AsyncConnection, execution_id: UUID) -> Execution | None:
        return await self._transition(conn, "execution_retry_manually", execution_id, states.MANUAL_RETRY_FROM)

    async def _transition(
        self, conn: AsyncConnection, name: str, execution_id: UUID, from_states: Sequence[str]
    ) -> Execution | None:
        row = (
            await conn.execute(_with_states(Q[name]), {"id": execution_id, "from_states": list(from_states)})
        ).first()
        return to_execution(row) if row else None

    async def events(self, conn: AsyncConnection, execution_id: UUID) -> list[dict[str, Any]]:
        rows = await conn.execute(Q["events_for_execution"], {"id": execution_id})
        return [dict(r._mapping["event"], id=r._mapping["id"]) for r in rows]

    async def notify(self, conn: AsyncConnection, channel: str, queue: str = "") -> None:
        await conn.execute(Q["notify"], {"channel": channel, "queue": queue})

    async def notify_if_limited(self, conn: AsyncConnection, channel: str, handlers: Sequence[str]) -> None:
        await conn.execute(Q["notify_if_limited"], {"channel": channel, "handlers": list(handlers)})


def _succeed_params(items: Sequence[tuple[UUID, int, Any]], channel: str) -> dict[str, Any]:
    """executions_succeed's batch as parallel arrays (results as JSON text)."""
    return {"ids": [i for i, _, _ in items], "attempts": [a for _, a, _ in items],
            "results": [None if r is None else _json(r) for _, _, r in items],
            "from_states": list(states.SUCCEED_FROM), "channel": channel}
