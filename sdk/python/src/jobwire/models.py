"""The API's resources as the client returns them: frozen dataclasses, one per shape of the API
(see `_resource.py` for what they share: `.raw`, and tolerance of fields a newer server adds).

Fields the API always sends have no default; a field this release of the API added, or one an
older server may lack, has one (`Execution.progress` is None until a handler reports progress,
`BulkResult.skipped` 0).
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from datetime import datetime
from typing import Any, Generic, TypeVar

from jobwire._resource import Resource, many, one, parse_time, times

__all__ = ["TERMINAL_STATES", "WORKFLOW_STATES", "AdaptiveLimit", "AddedJobs", "ApiKey", "Attempt", "Blocker",
           "Blockers", "BulkDryRun", "BulkResult", "Circuit", "ConcurrencyKey", "Debounce", "Event", "EventPage",
           "Execution", "Handler", "HandlerBatch", "HandlerSecret", "Health", "KeyRate", "LogEntry", "Node", "Page",
           "Progress", "Queue", "RateLimit", "Readiness", "Schedule", "Delivery", "Signal", "SignalSent",
           "StreamedEvent", "Subscription", "TransitionEvent", "Workflow", "WorkflowEvent", "WorkflowItem",
           "WorkflowJob", "WorkflowRef", "parse_time"]

T = TypeVar("T")

# States no writer moves on by itself (only a user's retry does): SUCCEEDED, DEAD_LETTER and
# CANCELLED; and ABANDONED, where a cron fire stays (a delayed job is re-enqueued or dead-lettered
# in the same transaction, so it is never seen there). FAILED is transient, like ENQUEUED and
# PROCESSING: the attempt's retry or dead letter follows. WAITING (a job of a workflow whose
# parents are not all terminal, or one its handler suspended) is not terminal either: its last
# parent's end enqueues or cancels it; a suspended one is enqueued again when its wait is over.
TERMINAL_STATES = frozenset({"SUCCEEDED", "DEAD_LETTER", "CANCELLED", "ABANDONED"})
# A workflow is RUNNING while one of its jobs is not terminal, then ends in one of the others.
WORKFLOW_STATES = ("RUNNING", "SUCCEEDED", "FAILED", "CANCELLED")


# --- executions ------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True, kw_only=True)
class Progress(Resource):
    total: int = 0
    succeeded: int = 0
    failed: int = 0
    status: str | None = None
    percentage: int = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class WorkflowRef(Resource):
    """Where a job stands in a workflow: the workflow's `id` (`client.workflows.get`) and the
    job's `ref` there, the name `depends_on` gives it."""

    id: str
    ref: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Execution(Resource):
    """One execution of a job (`GET /v1/executions/{id}`). `state` is ENQUEUED, PROCESSING,
    SUCCEEDED, FAILED, CANCELLED, ABANDONED, DEAD_LETTER, or WAITING: a job of a workflow whose
    parents are not all terminal yet (`workflow` says which workflow, None outside one), or one
    its handler suspended until a time, a signal or a timeout (`client.executions.blockers`)."""

    id: str
    job_id: str
    job_type: str  # DELAYED or CRON
    handler: str
    queue: str
    state: str
    attempt: int
    max_attempts: int
    priority: int = 0
    stateful: bool = False
    payload: Any = None
    parameters: Any = None
    metadata: Any = None
    result: Any = None
    progress: Progress | None = None  # None until a handler reports progress
    scheduled_at: datetime
    created_at: datetime
    started_at: datetime | None = None
    completed_at: datetime | None = None
    deadline_at: datetime | None = None
    locked_by: str | None = None
    last_error: str | None = None
    error_type: str | None = None
    created: bool | None = None  # in a batch's answer: False when an idempotency key found it
    concurrency_key: str | None = None  # the key it shares its handler's per-key limits with
    workflow: WorkflowRef | None = None  # the workflow it belongs to; None: none
    # In the answer to an enqueue with `debounce` only (None otherwise): True when the enqueue went
    # to the execution that was waiting (trailing) or that ran first (leading), this one; False
    # when it made this one.
    debounced: bool | None = None

    _READERS = {**times("scheduled_at", "created_at", "started_at", "completed_at", "deadline_at"),
                "progress": one(Progress.from_json), "workflow": one(WorkflowRef.from_json)}

    @property
    def is_terminal(self) -> bool:
        """True once no writer but a user's retry moves it on (see TERMINAL_STATES)."""
        return self.state in TERMINAL_STATES


@dataclass(frozen=True, slots=True, kw_only=True)
class Debounce(Resource):
    """What `client.jobs.enqueue` takes as `debounce=` (`POST /v1/jobs` only: a batch refuses
    it): while an execution of the handler and `key` waits, an enqueue goes to it instead of
    making another. `mode` `trailing`: the waiting execution is due `delay_seconds` after the
    latest enqueue and takes its payload and metadata; `leading`: the first enqueue runs at once,
    those within `delay_seconds` of the latest are dropped. Never later than `max_delay_seconds`
    after the run's first enqueue (None: the most, 86,400). It decides when the job runs: not with
    `run_at` or `delay_seconds`. The answer's `Execution.debounced` says where the enqueue went."""

    key: str  # per handler, e.g. `reindex:customer:42`
    delay_seconds: float
    max_delay_seconds: float | None = None
    mode: str = "trailing"  # trailing or leading


@dataclass(frozen=True, slots=True, kw_only=True)
class Attempt(Resource):
    """One attempt of an execution, from its history (`GET /v1/executions/{id}/attempts`)."""

    attempt: int
    state: str
    started_at: datetime
    ended_at: datetime | None = None
    duration_ms: int | None = None
    node: str | None = None
    error_type: str | None = None
    error: str | None = None
    http_status: int | None = None

    _READERS = times("started_at", "ended_at")


@dataclass(frozen=True, slots=True, kw_only=True)
class Blocker(Resource):
    """One reason an ENQUEUED execution is not running now (`GET /v1/executions/{id}/blockers`):
    `scheduled` (`until`), `queue_paused` (`queue`), `handler_concurrency` (`in_flight` of
    `limit`), `key_concurrency` (its concurrency `key` has `in_flight` of `limit`), `rate_limit`
    (the next call may start at `next_slot`: the handler's rate_limit, or with `key` the key's
    key_rate_limit), `key_paused` (`key`), `circuit_open` (the handler's circuit breaker lets no
    call out until `until`, then one probe), `retry_after` (a 429 or 503 with Retry-After holds
    the handler, or with `key` the key, until `until`), `adaptive_limit` (the adaptive handler,
    or with `key` the key, has `in_flight` calls of its effective `limit`), `stateful`
    (`execution_id` in `state`, PROCESSING or ENQUEUED ahead), `no_node_serves_queue` (`queue`),
    `dependencies` (a WAITING job of a workflow: its parents `refs` are not terminal yet),
    `suspended` (a WAITING job its handler suspended: until `until`, one of `signals`, the end
    of its spawned children (`children`: how many are not terminal yet; None when it does not
    wait for them), or `timeout_at`, whichever comes first)."""

    reason: str
    until: datetime | None = None
    queue: str | None = None
    in_flight: int | None = None
    limit: int | None = None
    execution_id: str | None = None
    state: str | None = None
    key: str | None = None
    next_slot: datetime | None = None
    refs: list[str] | None = None  # `dependencies`: the parents it waits for
    signals: list[str] | None = None  # `suspended`: the signals that end the wait
    timeout_at: datetime | None = None  # `suspended`: when the wait ends anyway (reason `timeout`)
    children: int | None = None  # `suspended` for its spawned children: those not terminal yet

    _READERS = times("until", "next_slot", "timeout_at")


@dataclass(frozen=True, slots=True, kw_only=True)
class Blockers(Resource):
    """Why an execution is not running now: its `state`, and `items`, empty when nothing holds it
    back (or it is neither ENQUEUED nor WAITING)."""

    state: str
    items: list[Blocker] = field(default_factory=list)

    _READERS = {"items": many(Blocker.from_json)}


@dataclass(frozen=True, slots=True, kw_only=True)
class TransitionEvent(Resource):
    """The curated event of a transition: no payload, result, error text or parameters."""

    execution_id: str
    job_id: str
    job_type: str
    queue: str
    handler: str
    new_state: str
    attempt: int
    max_attempts: int
    error_type: str | None = None
    scheduled_at: datetime
    created_at: datetime
    started_at: datetime | None = None
    completed_at: datetime | None = None
    metadata: Any = None
    retry_at: datetime | None = None  # a failed or abandoned attempt that another follows

    _READERS = times("scheduled_at", "created_at", "started_at", "completed_at", "retry_at")


@dataclass(frozen=True, slots=True, kw_only=True)
class WorkflowEvent(Resource):
    """The event of a workflow's end (`workflow.succeeded`, `.failed`, `.cancelled`): the workflow
    as it ended, its jobs counted by state."""

    workflow_id: str
    name: str | None = None
    state: str  # SUCCEEDED, FAILED or CANCELLED
    counts: dict[str, int] = field(default_factory=dict)
    metadata: Any = None
    created_at: datetime
    completed_at: datetime

    _READERS = times("created_at", "completed_at")


def event_data(data: Any) -> TransitionEvent | WorkflowEvent:
    """An event's `data`: a workflow's end (it names `workflow_id`, no execution), else a transition."""
    if isinstance(data, dict) and "workflow_id" in data and "execution_id" not in data:
        return WorkflowEvent.from_json(data)
    return TransitionEvent.from_json(data)


@dataclass(frozen=True, slots=True, kw_only=True)
class Event(Resource):
    """An event: a transition of an execution (`type` execution.*, `data` a TransitionEvent; an
    execution's own events, `GET /v1/executions/{id}/events`, are only these), or a workflow's end
    (`type` workflow.*, `data` a WorkflowEvent), which the feed, its stream and subscriptions also
    carry. Typed code tells them apart with `isinstance(event.data, TransitionEvent)`."""

    id: int
    # execution.succeeded, .failed, .abandoned, .dead_lettered, .cancelled, .retried;
    # workflow.succeeded, .failed, .cancelled
    type: str
    occurred_at: datetime
    data: TransitionEvent | WorkflowEvent

    _READERS = {**times("occurred_at"), "data": event_data}


@dataclass(frozen=True, slots=True, kw_only=True)
class EventPage(Resource):
    """One page of the event feed (`GET /v1/events`): every execution's events, in the order the
    feed serves them. `next_cursor` is never None: after the last page it is where to ask again
    (store it, and resume from it later: no event is missed)."""

    items: list[Event] = field(default_factory=list)
    next_cursor: str

    _READERS = {"items": many(Event.from_json)}


@dataclass(frozen=True, slots=True, kw_only=True)
class StreamedEvent(Event):
    """An event as `client.events.stream` yields it: the feed's `Event` (`raw` is the item as sent)
    and `cursor`, the message's SSE id: where the stream, or the feed, resumes right after it."""

    cursor: str

    @classmethod
    def of(cls, item: Any, cursor: str) -> StreamedEvent:
        """The event of one message: its data (the item) and its id."""
        event = Event.from_json(item)
        return cls(**{f.name: getattr(event, f.name) for f in fields(Event)}, cursor=cursor)


@dataclass(frozen=True, slots=True, kw_only=True)
class LogEntry(Resource):
    """A log entry a handler wrote (`GET /v1/executions/{id}/logs`)."""

    attempt: int
    level: str
    message: str
    logged_at: datetime

    _READERS = times("logged_at")


@dataclass(frozen=True, slots=True, kw_only=True)
class BulkResult(Resource):
    """What a bulk action did; `more`: further executions match, send it again with
    `cursor=next_cursor` (the repetition is then one pass, and ends)."""

    matched: int
    changed: int
    more: bool
    skipped: int = 0  # matched but left as they were (e.g. a retry whose handler is gone)
    next_cursor: str | None = None  # where the next call starts


@dataclass(frozen=True, slots=True, kw_only=True)
class BulkDryRun(Resource):
    """A bulk action's dry run (`dry_run=True`): nothing changed. `matched`: the executions the
    call would take now (at most its `limit`); `more`: further ones match beyond it."""

    matched: int
    more: bool


@dataclass(frozen=True, slots=True, kw_only=True)
class SignalSent(Resource):
    """The answer to `client.executions.signal`: the signal's `id`, and `woke`, True when the
    execution was waiting for it (resumed now, the signal consumed), False when it is kept for
    the first wait that names it."""

    id: int
    woke: bool


@dataclass(frozen=True, slots=True, kw_only=True)
class Signal(Resource):
    """A signal sent to an execution (`GET /v1/executions/{id}/signals`): its `name`, `payload`,
    when it was sent, and `consumed_at`, when a wait took it (None while it is kept)."""

    id: int
    name: str
    payload: Any = None
    sent_at: datetime
    consumed_at: datetime | None = None

    _READERS = times("sent_at", "consumed_at")


@dataclass(frozen=True, slots=True)
class Page(Generic[T]):
    """One page of a listing; `next_cursor` asks for the next (None on the last)."""

    items: list[T]
    next_cursor: str | None = None
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)


# --- workflows -------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True, kw_only=True)
class WorkflowItem(Resource):
    """A job a workflow was made with or given (`client.workflows.create`, `add_jobs`): its `ref`,
    its execution and that execution's state then (WAITING, or ENQUEUED when it has no parent to
    wait for)."""

    ref: str
    execution_id: str
    state: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Workflow(Resource):
    """A workflow (`GET /v1/workflows/{id}`): jobs with dependencies, made at once. `state` is
    RUNNING while one of its jobs is not terminal, then SUCCEEDED (every job succeeded), FAILED
    (one was dead-lettered, or cancelled by a failed dependency) or CANCELLED (a user cancelled
    one); `counts` has its `jobs` by state (states with none left out).

    `items` is set in the answer to `client.workflows.create` only: its jobs, in the request's
    order (empty elsewhere); `waiting_again` and `retried` in the answer to
    `client.workflows.retry` only (None elsewhere)."""

    id: str
    name: str | None = None
    metadata: Any = None
    state: str  # RUNNING, SUCCEEDED, FAILED or CANCELLED
    counts: dict[str, int] = field(default_factory=dict)
    jobs: int
    created_at: datetime
    updated_at: datetime
    completed_at: datetime | None = None
    items: list[WorkflowItem] = field(default_factory=list)
    waiting_again: int | None = None  # jobs a failed dependency had cancelled, WAITING again
    retried: int | None = None  # dead-lettered jobs enqueued again, a new attempt each

    _READERS = {**times("created_at", "updated_at", "completed_at"), "items": many(WorkflowItem.from_json)}

    @property
    def is_finished(self) -> bool:
        """True once it is no longer RUNNING (only a retry runs it on)."""
        return self.state != "RUNNING"


@dataclass(frozen=True, slots=True, kw_only=True)
class AddedJobs(Resource):
    """The answer to `client.workflows.add_jobs`: the `workflow` with them, and the jobs added
    (`items`, in the request's order)."""

    workflow: Workflow
    items: list[WorkflowItem] = field(default_factory=list)

    _READERS = {"workflow": Workflow.from_json, "items": many(WorkflowItem.from_json)}


@dataclass(frozen=True, slots=True, kw_only=True)
class WorkflowJob(Resource):
    """A job of a workflow as `client.workflows.jobs` lists it: its `ref`, its execution, that
    execution's `state` and `queue`, and the refs it `depends_on`."""

    ref: str
    execution_id: str
    state: str
    queue: str
    depends_on: list[str] = field(default_factory=list)


# --- handlers --------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True, kw_only=True)
class HandlerSecret(Resource):
    """A handler's signing secret. `secret` (`whsec_…`) is shown once, in the answer that created
    it; a listing shows only `id`, `created_at` and `expires_at`."""

    id: str
    created_at: datetime
    expires_at: datetime | None = None
    secret: str | None = None

    _READERS = times("created_at", "expires_at")


@dataclass(frozen=True, slots=True, kw_only=True)
class RateLimit(Resource):
    """A handler's `rate_limit` or `key_rate_limit`: at most `limit` calls start in any window of
    `period_seconds`, spaced evenly (bursts of at most limit / 20); jobs held back stay ENQUEUED
    and spend no attempt. Also what `client.handlers.put` takes
    (`rate_limit=RateLimit(limit=20, period_seconds=1)`), so a handler's limits can be put back."""

    limit: int
    period_seconds: float


@dataclass(frozen=True, slots=True, kw_only=True)
class HandlerBatch(Resource):
    """A handler's `batch`: its due jobs are sent together, up to `max_size` (1–500) in one signed
    POST of `{"executions": [...]}`, a smaller call waiting up to `max_wait_ms` (0–1000) for more;
    each job keeps its own attempt, deadline and retries (`jobwire.handler.BatchHandler` answers
    such calls). Also what `client.handlers.put` takes (`batch=HandlerBatch(max_size=50)`)."""

    max_size: int
    max_wait_ms: int = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class Circuit(Resource):
    """A handler's circuit breaker: `closed` (calls go out); `open` after 5 consecutive
    connection failures, timeouts or 5xx replies (`failures`): no call goes out until `until`,
    then one probe; `half_open`: that probe is out (`until` its deadline), and its success closes
    the circuit. Jobs held back stay ENQUEUED and spend no attempt."""

    state: str  # closed, open or half_open
    until: datetime | None = None
    failures: int

    _READERS = times("until")


@dataclass(frozen=True, slots=True, kw_only=True)
class AdaptiveLimit(Resource):
    """An adaptive handler's effective limit: at most `limit` calls in flight now (jobs without a
    concurrency key; each key has its own), changed last at `since` (None: not yet). It starts at
    min(max_concurrency, 4), grows with successes up to max_concurrency and halves on a 429 or
    503 without Retry-After, or a timeout."""

    limit: int
    since: datetime | None = None

    _READERS = times("since")


@dataclass(frozen=True, slots=True, kw_only=True)
class Handler(Resource):
    """A registered handler (`GET /v1/handlers/{name}`). `secret` is set only in the answer to the
    PUT that created it: the signing secret, never shown again. `key_concurrency` and
    `key_rate_limit` hold per concurrency key (a job's `concurrency_key`), `rate_limit` for the
    whole handler; None: no such limit. `circuit` is its circuit breaker's state (None from a
    server without one); `adaptive` its effective limit when it was put with `adaptive=True`,
    else None (given back to `client.handlers.put` as `adaptive=`, it is True); `batch` its
    batching (None: one call per job)."""

    name: str
    url: str
    timeout_seconds: float | None = None
    max_concurrency: int | None = None
    stateful: bool = False
    key_concurrency: int | None = None
    rate_limit: RateLimit | None = None
    key_rate_limit: RateLimit | None = None
    circuit: Circuit | None = None
    adaptive: AdaptiveLimit | None = None
    batch: HandlerBatch | None = None
    created_at: datetime
    updated_at: datetime
    secrets: list[HandlerSecret] = field(default_factory=list)
    secret: str | None = None

    _READERS = {**times("created_at", "updated_at"), "secrets": many(HandlerSecret.from_json),
                "rate_limit": one(RateLimit.from_json), "key_rate_limit": one(RateLimit.from_json),
                "circuit": one(Circuit.from_json), "adaptive": one(AdaptiveLimit.from_json),
                "batch": one(HandlerBatch.from_json)}


@dataclass(frozen=True, slots=True, kw_only=True)
class KeyRate(Resource):
    """A concurrency key's window of its handler's key_rate_limit: `count` calls started since
    `window_start` (0 and None without a window open); `next_slot`, while ahead, is when the next
    may start."""

    count: int
    window_start: datetime | None = None
    next_slot: datetime | None = None

    _READERS = times("window_start", "next_slot")


@dataclass(frozen=True, slots=True, kw_only=True)
class ConcurrencyKey(Resource):
    """A handler's concurrency key (`GET /v1/handlers/{name}/keys`): its jobs `waiting` (ENQUEUED)
    and `in_flight` (PROCESSING), its `rate` window, `paused` (until resumed), and `retry_after`:
    a handler's 429 or 503 with Retry-After holds the key until then. Keys need no registration."""

    key: str
    waiting: int
    in_flight: int
    rate: KeyRate
    paused: bool
    retry_after: datetime | None = None

    _READERS = {**times("retry_after"), "rate": KeyRate.from_json}


# --- subscriptions ---------------------------------------------------------------------------

@dataclass(frozen=True, slots=True, kw_only=True)
class Subscription(Resource):
    """A subscriber of the event feed (`GET /v1/subscriptions/{name}`): each event it wants is
    POSTed to `url`, signed, at least once. `types`, `queues` and `handlers` narrow what it
    receives (None: every one). `state` is `enabled`, or `disabled` once it failed without a
    success for JOBWIRE_EVENT_DISABLE_AFTER (a put enables it again). While it fails,
    `failing_since` is set, `failures` counts the failed tries in a row, `retry_at` is the next
    probe and `last_error` says why; `backlog` counts the deliveries neither acknowledged nor dead.
    `secret` is set only in the answer to the put that created it: the signing secret, never
    shown again."""

    name: str
    url: str
    types: list[str] | None = None
    queues: list[str] | None = None
    handlers: list[str] | None = None
    state: str = "enabled"  # enabled or disabled
    failing_since: datetime | None = None
    failures: int = 0
    retry_at: datetime | None = None
    last_error: str | None = None
    disabled_at: datetime | None = None
    backlog: int = 0
    created_at: datetime
    updated_at: datetime
    secrets: list[HandlerSecret] = field(default_factory=list)
    secret: str | None = None

    _READERS = {**times("failing_since", "retry_at", "disabled_at", "created_at", "updated_at"),
                "secrets": many(HandlerSecret.from_json)}


@dataclass(frozen=True, slots=True, kw_only=True)
class Delivery(Resource):
    """One event's delivery to a subscription (`GET /v1/subscriptions/{name}/deliveries`):
    `event`, the item it sends (its body); `execution_id`, its execution's (a workflow event's: the
    workflow's id); `status` `pending` (not tried yet), `failed` (tried,
    tried again at `next_try_at`), `delivered` (a 2xx answered) or `dead` (not acknowledged within
    JOBWIRE_EVENT_RETRY_SECONDS, or its destination refused); `tries`; the last try's HTTP
    `last_status` (None: no answer) and `last_error`."""

    id: int
    event: Event
    execution_id: str
    status: str
    tries: int = 0
    created_at: datetime
    next_try_at: datetime | None = None
    last_try_at: datetime | None = None
    last_status: int | None = None
    last_error: str | None = None
    completed_at: datetime | None = None

    _READERS = {**times("created_at", "next_try_at", "last_try_at", "completed_at"), "event": Event.from_json}


# --- schedules, queues, nodes, API keys, health ----------------------------------------------

@dataclass(frozen=True, slots=True, kw_only=True)
class Schedule(Resource):
    """A cron schedule (`GET /v1/schedules/{job_id}`)."""

    job_id: str
    cron: str
    timezone: str
    handler: str
    queue: str
    payload: Any = None
    parameters: Any = None
    metadata: Any = None
    priority: int = 0
    enabled: bool = True
    execution_mode: str  # SINGLE_INSTANCE or EVERY_INSTANCE
    overlap_policy: str
    misfire_policy: str
    max_attempts: int
    tracked: bool = False
    next_fire_at: datetime | None = None
    last_fired_at: datetime | None = None
    last_success_at: datetime | None = None
    last_failure_at: datetime | None = None
    consecutive_failures: int = 0
    created_at: datetime
    updated_at: datetime

    _READERS = times("next_fire_at", "last_fired_at", "last_success_at", "last_failure_at", "created_at",
                     "updated_at")


@dataclass(frozen=True, slots=True, kw_only=True)
class Queue(Resource):
    """A queue's depth (`GET /v1/queues`): `counts` by state (ENQUEUED, PROCESSING, DEAD_LETTER)."""

    name: str
    paused: bool
    counts: dict[str, int] = field(default_factory=dict)
    oldest_claimable_age_seconds: float | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Node(Resource):
    """A live Jobwire node (`GET /v1/nodes`)."""

    server_id: str
    started_at: datetime
    last_heartbeat: datetime
    in_flight: int = 0
    queues: list[str] | None = None  # the queues it claims from; None: every queue

    _READERS = times("started_at", "last_heartbeat")


@dataclass(frozen=True, slots=True, kw_only=True)
class ApiKey(Resource):
    """A stored API key (`GET /v1/api-keys`). `key` is set only in the answer that created it:
    the bearer token, never shown again. `queues` None: every queue."""

    id: str
    name: str
    scopes: list[str]
    queues: list[str] | None = None
    created_at: datetime
    key: str | None = None

    _READERS = times("created_at")


@dataclass(frozen=True, slots=True, kw_only=True)
class Health(Resource):
    """`GET /healthz`: the node answers (`status` is `ok`)."""

    status: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Readiness(Resource):
    """`GET /readyz`: `ready` when the database is reachable and migrated; else `detail` says why."""

    ready: bool
    detail: str | None = None

    @classmethod
    def from_answer(cls, body: Any) -> Readiness:
        # 200 {"status": "ready"}, or the 503 problem whose `detail` says what is missing.
        body = body if isinstance(body, dict) else {}
        return cls(ready=body.get("status") == "ready", detail=body.get("detail"), raw=dict(body))
