"""Why an ENQUEUED execution is not running now: the claim's rules (app/db/sql/functions/
jobwire_claim.sql), read as reasons. Each reason here is one the claim acts on; an execution with
none is due and waits only for a free slot of some node."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from uuid import UUID


class Reason(StrEnum):
    SCHEDULED = "scheduled"  # scheduled_at is in the future (a delay, a retry's backoff)
    QUEUE_PAUSED = "queue_paused"  # POST /v1/queues/{name}/pause
    HANDLER_CONCURRENCY = "handler_concurrency"  # the handler's max_concurrency calls are in flight
    KEY_CONCURRENCY = "key_concurrency"  # its concurrency key has key_concurrency calls in flight
    RATE_LIMIT = "rate_limit"  # the handler's rate_limit, or its key's key_rate_limit, allows no call now
    KEY_PAUSED = "key_paused"  # POST /v1/handlers/{name}/keys/{key}/pause
    CIRCUIT_OPEN = "circuit_open"  # the handler's circuit breaker holds its calls (app/domain/flow.py)
    ADAPTIVE_LIMIT = "adaptive_limit"  # an adaptive handler (or key) has its effective limit in flight
    RETRY_AFTER = "retry_after"  # a 429 or 503 with Retry-After holds the handler (or its key)
    STATEFUL = "stateful"  # another stateful job of the queue runs, or goes first
    NO_NODE_SERVES_QUEUE = "no_node_serves_queue"  # no live node claims from the queue (JOBWIRE_QUEUES)
    DEPENDENCIES = "dependencies"  # a WAITING job of a workflow: its parents not terminal yet (refs)
    SUSPENDED = "suspended"  # a handler's suspend: until a time (until), a signal (signals), the end
    # of its spawned children (children: how many are unfinished), a timeout


@dataclass(frozen=True, slots=True)
class Blocker:
    reason: Reason
    until: datetime | None = None  # scheduled
    queue: str | None = None  # queue_paused, no_node_serves_queue
    in_flight: int | None = None  # handler_concurrency
    limit: int | None = None  # handler_concurrency
    execution_id: UUID | None = None  # stateful: the execution that holds the queue, or goes first
    state: str | None = None  # stateful: that execution's state (PROCESSING, or ENQUEUED ahead)
    key: str | None = None  # key_concurrency, key_paused, rate_limit of a key
    next_slot: datetime | None = None  # rate_limit: when the next call may start
    refs: tuple[str, ...] | None = None  # dependencies: the refs of its parents not terminal yet
    signals: tuple[str, ...] | None = None  # suspended: the signals it waits for
    timeout_at: datetime | None = None  # suspended: when it resumes anyway
    children: int | None = None  # suspended for its spawned children: how many are not terminal yet


@dataclass(frozen=True, slots=True)
class BlockerFacts:
    """What the claim would look at for one execution, read in one snapshot."""

    state: str
    queue: str
    scheduled_until: datetime | None  # scheduled_at when it is in the future
    queue_paused: bool
    handler_limit: int | None  # max_concurrency
    handler_in_flight: int | None  # PROCESSING calls of the handler, counted when it has a limit
    concurrency_key: str | None
    key_limit: int | None  # key_concurrency (for a job with a key)
    key_in_flight: int | None  # PROCESSING calls of its key, counted when it has a limit
    key_paused: bool
    handler_rate_next: datetime | None  # the handler's rate limit's next slot, while ahead
    key_rate_next: datetime | None  # its key's rate limit's next slot, while ahead
    circuit_until: datetime | None  # the handler's circuit is open (or its probe out) until then
    adaptive_limit: int | None  # the effective limit over the execution (its key's, or the handler's)
    adaptive_in_flight: int | None  # the calls in flight that limit counts
    handler_retry_after: datetime | None
    key_retry_after: datetime | None
    stateful_holder: UUID | None  # a stateful job of the queue PROCESSING (stateful jobs only)
    stateful_ahead: UUID | None  # a due stateful job of the queue the claim takes first
    node_serves_queue: bool
    dependencies: list[str] | None = None  # a WAITING job's parents not terminal yet, by ref
    suspended_until: datetime | None = None  # a suspended job's wait: its time, signals and timeout
    suspended_signals: list[str] | None = None
    suspended_timeout_at: datetime | None = None
    suspended_children: int | None = None  # waiting for its spawned children: those unfinished
    suspended: bool = False


def blockers_of(facts: BlockerFacts) -> list[Blocker]:
    """The reasons an execution is not running now: for a WAITING one its unfinished parents, for an
    ENQUEUED one the claim's rules; none in any other state."""
    if facts.state == "WAITING":
        if facts.suspended:
            return [Blocker(Reason.SUSPENDED, until=facts.suspended_until, timeout_at=facts.suspended_timeout_at,
                            signals=tuple(facts.suspended_signals or ()), children=facts.suspended_children)]
        return [Blocker(Reason.DEPENDENCIES, refs=tuple(facts.dependencies))] if facts.dependencies else []
    if facts.state != "ENQUEUED":
        return []
    found: list[Blocker] = []
    if facts.scheduled_until is not None:
        found.append(Blocker(Reason.SCHEDULED, until=facts.scheduled_until))
    if facts.queue_paused:
        found.append(Blocker(Reason.QUEUE_PAUSED, queue=facts.queue))
    if facts.handler_limit is not None and facts.handler_in_flight is not None \
            and facts.handler_in_flight >= facts.handler_limit:
        found.append(Blocker(Reason.HANDLER_CONCURRENCY, in_flight=facts.handler_in_flight,
                             limit=facts.handler_limit))
    if facts.key_limit is not None and facts.key_in_flight is not None and facts.key_in_flight >= facts.key_limit:
        found.append(Blocker(Reason.KEY_CONCURRENCY, key=facts.concurrency_key, in_flight=facts.key_in_flight,
                             limit=facts.key_limit))
    if facts.key_paused:
        found.append(Blocker(Reason.KEY_PAUSED, key=facts.concurrency_key))
    if facts.circuit_until is not None:
        found.append(Blocker(Reason.CIRCUIT_OPEN, until=facts.circuit_until))
    if facts.handler_retry_after is not None:
        found.append(Blocker(Reason.RETRY_AFTER, until=facts.handler_retry_after))
    if facts.key_retry_after is not None:
        found.append(Blocker(Reason.RETRY_AFTER, key=facts.concurrency_key, until=facts.key_retry_after))
    if facts.adaptive_limit is not None and facts.adaptive_in_flight is not None \
            and facts.adaptive_in_flight >= facts.adaptive_limit:
        found.append(Blocker(Reason.ADAPTIVE_LIMIT, key=facts.concurrency_key, in_flight=facts.adaptive_in_flight,
                             limit=facts.adaptive_limit))
    if facts.handler_rate_next is not None:
        found.append(Blocker(Reason.RATE_LIMIT, next_slot=facts.handler_rate_next))
    if facts.key_rate_next is not None:
        found.append(Blocker(Reason.RATE_LIMIT, key=facts.concurrency_key, next_slot=facts.key_rate_next))
    if facts.stateful_holder is not None:
        found.append(Blocker(Reason.STATEFUL, execution_id=facts.stateful_holder, state="PROCESSING"))
    elif facts.stateful_ahead is not None:
        found.append(Blocker(Reason.STATEFUL, execution_id=facts.stateful_ahead, state="ENQUEUED"))
    if not facts.node_serves_queue:
        found.append(Blocker(Reason.NO_NODE_SERVES_QUEUE, queue=facts.queue))
    return found
