"""Handlers: the named HTTP targets jobs are dispatched to."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from app.domain.batching import Batch
from app.domain.flow import Circuit
from app.domain.handler_secrets import HandlerSecret


@dataclass(frozen=True, slots=True)
class RateLimit:
    """At most `limit` calls start in any window of `period_seconds` (jobwire_rate_allowance)."""

    limit: int
    period_seconds: float

    def document(self) -> dict[str, int | float]:
        """As the API shows it and job_handlers stores it (the claim reads both fields)."""
        return {"limit": self.limit, "period_seconds": self.period_seconds}


@dataclass(frozen=True, slots=True)
class Handler:
    name: str
    url: str
    timeout_seconds: float | None
    max_concurrency: int | None
    stateful: bool
    created_at: datetime
    updated_at: datetime
    # Its signing secrets that still sign (none expired), newest first; never their values.
    secrets: tuple[HandlerSecret, ...] = ()
    # The signing secret (whsec_…) in plain text: only on the handler a create returns (shown once).
    secret: str = field(repr=False, default="")
    key_concurrency: int | None = None  # calls in flight per concurrency key
    rate_limit: RateLimit | None = None  # call starts of the handler
    key_rate_limit: RateLimit | None = None  # call starts per concurrency key
    adaptive: bool = False  # AIMD below max_concurrency (app/domain/flow.py)
    circuit: Circuit = Circuit()  # its circuit breaker, shared by every node
    adaptive_limit: int | None = None  # an adaptive handler's effective limit (jobs without a key)
    adaptive_since: datetime | None = None
    batch: Batch | None = None  # its due jobs sent together; None: one call per job
