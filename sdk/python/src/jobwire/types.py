"""The keyword options of the client's methods, as TypedDicts: a type checker checks each name and
value (`client.jobs.enqueue("echo", priority="high")` is an error), and at run time they are the
JSON fields sent. An option left out, or given as None, takes the server's default. A field a
newer server takes that these do not list still goes through at run time (the type checker then
wants a `# type: ignore`); the server refuses a name it does not know, naming it."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any, Literal, Required, TypedDict
from uuid import UUID

from jobwire.models import AdaptiveLimit, Debounce, HandlerBatch, RateLimit

Id = str | UUID  # an execution's, a secret's or an API key's id: a UUID or its text


class DebounceSpec(TypedDict, total=False):
    """A debounce as a mapping, as the API writes it (`jobwire.Debounce` says the same as an
    object, and what each field means)."""

    key: Required[str]
    delay_seconds: Required[float]
    max_delay_seconds: float | None
    mode: str  # trailing (the default) or leading


class JobFields(TypedDict, total=False):
    """The fields of `POST /v1/jobs` beside `handler` and `payload` that every job takes: one
    enqueued alone, one of a batch, one of a workflow."""

    job_id: str | None
    queue: str | None
    priority: int | None
    run_at: datetime | str | None  # aware; RFC 3339 text is sent as it is
    delay_seconds: float | None
    max_attempts: int | None
    stateful: bool | None
    timeout_seconds: float | None
    max_duration_seconds: float | None
    parameters: Mapping[str, Any] | None
    metadata: Mapping[str, Any] | None
    idempotency_key: str | None  # without one the client makes one (`sdk-<uuid4>`)
    concurrency_key: str | None  # shares its handler's key_concurrency and key_rate_limit with its key's jobs


class JobOptions(JobFields, total=False):
    """The fields of `POST /v1/jobs` beside `handler` and `payload`."""

    debounce: Debounce | DebounceSpec | None  # one job only (a batch refuses it); not with run_at or delay_seconds


class Job(JobOptions, total=False):
    """One job of a batch (`POST /v1/jobs/batch`)."""

    handler: Required[str]
    payload: Any


class WorkflowJobSpec(JobFields, total=False):
    """One job of a workflow (`client.workflows.create`, `add_jobs`): `ref`, its name in the
    workflow (unique there); `depends_on`, the refs of the jobs it waits for (it is WAITING until
    each is terminal); `on_dependency_failure`, what a parent that ends DEAD_LETTER or CANCELLED
    does to it: `cancel` it and its descendants (the default), or let it `run` once every parent is
    terminal, whatever their outcome (a batch callback); then `handler`, `payload` and every field
    of an enqueue but `debounce`. Without an `idempotency_key` none is made: the workflow's key
    covers its jobs."""

    ref: Required[str]
    handler: Required[str]
    payload: Any
    depends_on: Iterable[str] | None
    on_dependency_failure: Literal["cancel", "run"] | None


class RateLimitSpec(TypedDict):
    """A rate limit as a mapping, as the API writes it: at most `limit` calls start in any window
    of `period_seconds` (`jobwire.RateLimit` says the same as an object)."""

    limit: int
    period_seconds: float


class BatchSpec(TypedDict, total=False):
    """A handler's batching as a mapping, as the API writes it (`jobwire.HandlerBatch` says the same
    as an object): up to `max_size` due jobs in one call, a smaller call waiting up to
    `max_wait_ms` for more (default 0)."""

    max_size: Required[int]
    max_wait_ms: int


class HandlerOptions(TypedDict, total=False):
    """The fields of `PUT /v1/handlers/{name}` beside `url` (the PUT is the whole definition: a
    field left out takes its default again, a limit left out is gone)."""

    timeout_seconds: float | None
    max_concurrency: int | None
    stateful: bool | None
    key_concurrency: int | None  # calls in flight per concurrency key
    rate_limit: RateLimit | RateLimitSpec | None  # call starts of the whole handler
    key_rate_limit: RateLimit | RateLimitSpec | None  # call starts per concurrency key
    # Adapt the calls in flight to what the handler takes, up to max_concurrency (needed). A
    # handler's `adaptive` as read may be given back: an AdaptiveLimit is True, None leaves it off.
    adaptive: bool | AdaptiveLimit | None
    batch: HandlerBatch | BatchSpec | None  # its due jobs sent together; None: one call per job


class ScheduleOptions(TypedDict, total=False):
    """The fields of `PUT /v1/schedules/{job_id}` beside `cron` and `handler` (the PUT is the
    whole definition: a field left out takes its default again)."""

    timezone: str | None
    queue: str | None
    payload: Any
    parameters: Mapping[str, Any] | None
    metadata: Mapping[str, Any] | None
    priority: int | None
    enabled: bool | None
    execution_mode: str | None  # SINGLE_INSTANCE or EVERY_INSTANCE
    overlap_policy: str | None  # SKIP or QUEUE_ONE
    misfire_policy: str | None  # FIRE_ONCE or SKIP
    max_attempts: int | None
    tracked: bool | None


class SubscriptionOptions(TypedDict, total=False):
    """The fields of `PUT /v1/subscriptions/{name}` beside `url`, each narrowing what it receives
    (left out or None: every one; the PUT is the whole definition): `types`, event types
    (`["execution.succeeded", "execution.dead_lettered"]`); `queues`; `handlers`."""

    types: Iterable[str] | None
    queues: Iterable[str] | None
    handlers: Iterable[str] | None


class ExecutionFilters(TypedDict, total=False):
    """The filters of `GET /v1/executions`, every one given must match; `limit` is the page size
    (default 50, at most 500). `metadata`: `"key:value"` or `(key, value)`, the executions whose
    metadata's top-level `key` is the JSON string `value`; `created_after` (at or after) and
    `created_before` (before): a time window, aware datetimes or RFC 3339 text with an offset."""

    state: str | None
    queue: str | None
    handler: str | None
    job_id: str | None
    idempotency_key: str | None
    concurrency_key: str | None
    metadata: str | tuple[str, str] | None
    created_after: datetime | str | None
    created_before: datetime | str | None
    limit: int | None


class WorkflowFilters(TypedDict, total=False):
    """The filters of `GET /v1/workflows`: `state` (RUNNING, SUCCEEDED, FAILED or CANCELLED),
    `name`; `limit` is the page size (default 50, at most 1000)."""

    state: str | None
    name: str | None
    limit: int | None


class EventStreamFilters(TypedDict, total=False):
    """The filters of `GET /v1/events/stream` (and of the feed): `types`, event types
    (`["execution.succeeded", "execution.dead_lettered"]`, or one comma-separated string);
    `queue`; `handler`."""

    types: Iterable[str] | str | None
    queue: str | None
    handler: str | None


class EventFilters(EventStreamFilters, total=False):
    """The filters of `GET /v1/events`: `types`, event types (`["execution.succeeded",
    "execution.dead_lettered"]`, or one comma-separated string); `queue`; `handler`. `limit` is
    the page size (default 100, at most 1000)."""

    limit: int | None


class Selection(TypedDict, total=False):
    """Which executions a bulk action takes: every filter given must match, at least one is needed;
    at most `limit` (default and most 10,000) in one call; `cursor`: the previous answer's
    `next_cursor`, to go on where it stopped."""

    state: str | None
    queue: str | None
    handler: str | None
    job_id: str | None
    ids: Iterable[Id] | None
    limit: int | None
    cursor: str | None
