"""Dispatch: a claimed job, as the dispatcher calls its handler, and the outcome of that call."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any
from uuid import UUID

from app.domain.batching import Batch
from app.domain.waits import Suspend


@dataclass(frozen=True, slots=True)
class ClaimedJob:
    """What the dispatcher needs to make one HTTP call. payload, parameters and metadata are
    JSON values, or (as the claim returns them) orjson fragments of their stored JSON text."""

    id: UUID
    job_id: str
    job_type: str
    queue: str
    attempt: int
    max_attempts: int
    payload: Any
    parameters: Any
    metadata: Any
    scheduled_at: datetime
    started_at: datetime
    deadline_at: datetime
    seconds_left: float
    handler: str
    handler_url: str | None
    handler_secret: str | None  # the newest of handler_secrets (jobwire_claim still returns it: CHANGELOG.md)
    # Every active signing secret of the handler as stored (whsec_… or jwenc1:…), newest first: each
    # signs the call. Made without them (tests), the call signs with handler_secret alone.
    handler_secrets: tuple[str, ...] = ()
    concurrency_key: str | None = None
    # Its reply moves flow state (app/domain/flow.py): its handler is adaptive, or its circuit has
    # failures counted or is not closed. A reply that fails does so whatever this says.
    flow_watch: bool = False
    # A job of a workflow: {id, ref, parents: {ref: {execution_id, state, result?}}} as an orjson
    # fragment of the claim's JSON (jobwire_claim's `workflow`); None for the others.
    workflow: Any = None
    # A job that suspended (DESIGN §9): its recorded `steps`, and `resume` ({n, reason, signals,
    # children}) when this attempt was resumed, as jobwire_resume_context built them; None otherwise.
    continuation: dict[str, Any] | None = None
    # Its handler's batching (jobwire_claim's handler_batch): sent with other due jobs of the handler.
    batch: Batch | None = None

    @property
    def resumption(self) -> int | None:
        """The resumption this dispatch is (1 for the first), None for a first dispatch."""
        resume = (self.continuation or {}).get("resume")
        return None if resume is None else int(resume["n"])


class OutcomeKind(StrEnum):
    SUCCEEDED = "succeeded"
    ACCEPTED = "accepted"  # 202: the handler now holds the execution
    FAILED = "failed"
    ABANDONED = "abandoned"  # the call was still open at the deadline
    REFUSED = "refused"  # an adaptive handler's 429 (app/domain/flow.py): back to ENQUEUED, same attempt
    SUSPENDED = "suspended"  # a reply {"suspend": …}: WAITING, the same attempt (app/domain/waits.py)


@dataclass(frozen=True, slots=True)
class Outcome:
    kind: OutcomeKind
    result: Any = None
    error: str | None = None
    error_type: str | None = None
    retryable: bool = True
    retry_after: float | None = None
    # The handler's HTTP status when its reply decided the outcome (a 202 keeps it only here: the
    # attempt's outcome comes later, by callback, with no status of its own).
    http_status: int | None = None
    suspend: Suspend | None = None  # SUSPENDED: what it waits for
    # The reply of a batch call as a whole (a failing status, a 202, a connection error, the
    # deadline), recorded for each of its jobs as this one object: flow state (circuit, adaptive
    # limit, refusals) counts it once, as one call's reply (app/services/flow.py).
    shared: bool = False
