"""Request and response models of /v1/handlers."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal
from uuid import UUID

from pydantic import AfterValidator, Field, Strict, StringConstraints

from app.api.fields import ResponseModel, Seconds, StrictModel
from app.domain.batching import MAX_BATCH_SIZE, MAX_BATCH_WAIT_MS
from app.domain.handler_urls import MAX_URL_LENGTH, handler_url_problem


def _deliverable(url: str) -> str:
    problem = handler_url_problem(url)
    if problem:
        raise ValueError(problem)
    return url


class RateLimitIn(StrictModel):
    """Call starts in a sliding window: at most `limit` in any `period_seconds`, spaced evenly
    (bursts of at most limit / 20). Jobs held back stay ENQUEUED and spend no attempt."""

    limit: Annotated[int, Strict(), Field(ge=1, le=1_000_000)]
    period_seconds: Annotated[float, Strict(), Field(gt=0, le=86400)]


class RateLimitOut(ResponseModel):
    limit: int
    period_seconds: float


class HandlerBatchIn(StrictModel):
    """Due jobs sent together: one signed POST of `{"executions": [...]}` with up to `max_size` of
    them, answered by `{"outcomes": [...]}`; each job keeps its own attempt, deadline and retries."""

    max_size: Annotated[int, Strict(), Field(ge=1, le=MAX_BATCH_SIZE)] = Field(
        description="at most this many jobs in one call")
    max_wait_ms: Annotated[int, Strict(), Field(ge=0, le=MAX_BATCH_WAIT_MS)] = Field(
        0, description="a call with fewer than max_size jobs waits up to this long for more (never past a job's "
                       "deadline); 0: sent at once with the jobs at hand")


class HandlerBatchOut(ResponseModel):
    max_size: int
    max_wait_ms: int


class HandlerIn(StrictModel):
    url: Annotated[str, Strict(), StringConstraints(max_length=MAX_URL_LENGTH), AfterValidator(_deliverable)] = Field(
        description="http:// or https://, called exactly as written: no user-info or fragment; a lower-case ASCII "
                    "host (IDNA names in their xn-- form, IPv4 as a.b.c.d, IPv6 in brackets); anything else outside "
                    "RFC 3986's characters percent-encoded. An IP host must be one JOBWIRE_HANDLER_NETWORKS allows; "
                    "a host name is judged by the address it resolves to at each call.")
    timeout_seconds: Seconds | None = None
    max_concurrency: Annotated[int, Strict(), Field(ge=1, le=1_000_000)] | None = None
    stateful: Annotated[bool, Strict()] = False
    key_concurrency: Annotated[int, Strict(), Field(ge=1, le=1_000_000)] | None = Field(
        None, description="At most this many calls in flight per concurrency key (jobs without a key are bound by "
                          "max_concurrency only).")
    rate_limit: RateLimitIn | None = Field(None, description="At most `limit` calls of this handler start in any "
                                                             "window of `period_seconds`; jobs beyond wait ENQUEUED.")
    key_rate_limit: RateLimitIn | None = Field(None, description="As rate_limit, per concurrency key.")
    adaptive: Annotated[bool, Strict()] = Field(
        False, description="Adapt the calls in flight to what the handler takes (needs max_concurrency, the ceiling): "
                           "start at min(max_concurrency, 4), double after each limit's worth of successes until a "
                           "429 or 503 without Retry-After, or a timeout, halves it; then one more per 20 successes. "
                           "A 429 puts its job back ENQUEUED with the same attempt (after 20 in a row, it is a failed "
                           "attempt). Per concurrency key for jobs with one.")
    batch: HandlerBatchIn | None = Field(
        None, description="Send due jobs together, up to max_size in one call (the dispatch protocol's batch form); "
                          "null: one call per job.")


class HandlerSecretOut(ResponseModel):
    """One of a handler's signing secrets, never its value."""

    id: UUID
    created_at: datetime
    expires_at: datetime | None = Field(description="when it stops signing; null: never (until deleted)")


class CircuitOut(ResponseModel):
    state: Literal["closed", "open", "half_open"] = Field(
        description="open: no calls until `until`; half_open: one probe call is out (until its deadline)")
    until: datetime | None
    failures: int = Field(description="consecutive connection failures, timeouts and 5xx replies; 5 open it")


class AdaptiveOut(ResponseModel):
    limit: int = Field(description="calls in flight it allows now (jobs without a key; each key has its own)")
    since: datetime | None = Field(description="when the limit last changed")


class HandlerOut(ResponseModel):
    name: str
    url: str
    timeout_seconds: float | None
    max_concurrency: int | None
    stateful: bool
    key_concurrency: int | None = None
    rate_limit: RateLimitOut | None = None
    key_rate_limit: RateLimitOut | None = None
    circuit: CircuitOut | None = None
    adaptive: AdaptiveOut | None = Field(None, description="an adaptive handler's effective limit; null: not adaptive")
    batch: HandlerBatchOut | None = Field(None, description="its due jobs sent together; null: one call per job")
    created_at: datetime
    updated_at: datetime
    secret: str | None = Field(
        None, description="Signing secret (whsec_…), in the response that created the handler only.")
    secrets: list[HandlerSecretOut] = Field(
        description="The signing secrets that sign each dispatch now (one `v1,` signature each), newest first: "
                    "those without an expiry and those scheduled to expire; expired ones are not listed.")


class KeyRateOut(ResponseModel):
    count: int = Field(description="calls of the key started in its current rate window (key_rate_limit); 0 "
                                   "without one")
    window_start: datetime | None = Field(description="when that window began; null when no window is open")
    next_slot: datetime | None = Field(description="when the rate limit lets the key's next call start, while that "
                                                   "is ahead; null: now")


class KeyOut(ResponseModel):
    key: str
    waiting: int = Field(description="jobs of the key ENQUEUED (due or not)")
    in_flight: int = Field(description="jobs of the key PROCESSING")
    rate: KeyRateOut
    paused: bool = Field(description="POST …/keys/{key}/pause holds the key's jobs until …/resume")
    retry_after: datetime | None = Field(description="a 429 or 503 with Retry-After holds the key until then")


class KeyPage(ResponseModel):
    items: list[KeyOut]
    next_cursor: str | None


class HandlerList(ResponseModel):
    items: list[HandlerOut]


# Rotation windows are bounded so the expiry stays a valid timestamp (a year is plenty).
MAX_ROTATION_SECONDS = 365 * 86400


class SecretIn(StrictModel):
    expire_others_after_seconds: Annotated[float, Strict(), Field(ge=0, le=MAX_ROTATION_SECONDS)] | None = Field(
        None, description="The handler's other secrets stop signing this many seconds from now (0: at once); "
                          "omitted, they sign until deleted.")


class SecretCreated(ResponseModel):
    id: UUID
    secret: str = Field(description="The new signing secret (whsec_…): shown in this response only.")
    created_at: datetime
