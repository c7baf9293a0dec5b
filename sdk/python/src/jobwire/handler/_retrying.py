"""When a callback is sent again: the backoff between tries, and the attempt's deadline they stop
at. No I/O here; time and randomness come in as arguments.

A callback is tried again after no answer and after 429, 502, 503 and 504 (Jobwire answers 503
while its database is away; a load balancer in front of restarting nodes answers 502 or 504),
waiting an exponential backoff with jitter (between ½ and 1 × min(max_delay, base_delay · 2ⁿ))
or the answer's Retry-After, and never past the deadline: after it Jobwire has abandoned the
attempt, and a callback changes nothing (a 409, or a no-op)."""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from jobwire.handler._job import Job

RETRIED_STATUSES = frozenset({429, 502, 503, 504})
# Jobwire's own default (JOBWIRE_EXECUTION_TIMEOUT), for a dispatch that carries no deadline.
DEFAULT_TIMEOUT = 120.0


@dataclass(frozen=True, slots=True)
class Backoff:
    base_delay: float = 0.2
    max_delay: float = 5.0
    random: Callable[[], float] = field(default=random.random, repr=False, compare=False)

    def delay(self, retry: int, retry_after: float | None, left: float) -> float:
        """Seconds to wait before resend number `retry + 1` (zero-based `retry`): the
        Retry-After when the answer gave one, else the backoff; at most `left`."""
        if retry_after is None:
            ceiling = min(self.max_delay, self.base_delay * 2 ** min(retry, 32))
            retry_after = ceiling * (0.5 + 0.5 * self.random())
        return max(0.0, min(retry_after, left))


def attempt_timeout(job: Job) -> float:
    """The attempt's timeout, as the claim set its deadline (started_at + timeout, or sooner when
    max_duration_seconds caps it)."""
    if job.deadline is not None and job.started_at is not None:
        return max(0.0, (job.deadline - job.started_at).total_seconds())
    if job.deadline is not None:
        return max(0.0, job.deadline.timestamp() - time.time())
    return DEFAULT_TIMEOUT


class AttemptDeadline:
    """When Jobwire gives up on the attempt unless it hears from it, on this process's monotonic
    clock: the attempt's timeout from when the dispatch arrived (measured from the dispatch's
    own started_at, so no clock skew between the hosts enters), moved by each heartbeat or
    progress Jobwire acknowledged to when it was sent + the timeout. Jobwire may cap a move at
    max_duration_seconds, which a handler does not see: past the real deadline a callback is a
    409 or a no-op, so erring late costs only tries."""

    def __init__(self, timeout: float, now: float) -> None:
        self.timeout = timeout
        self.at = now + timeout

    @classmethod
    def of(cls, job: Job, now: float) -> AttemptDeadline:
        return cls(attempt_timeout(job), now)

    def moved(self, sent_at: float) -> None:
        self.at = max(self.at, sent_at + self.timeout)

    def left(self, now: float) -> float:
        return self.at - now
