"""When the client sends a request again: the policy, with no I/O in it.

A try is repeated after a 503 or a transport failure, a bounded number of times, waiting an
exponential backoff with jitter (between ½ and 1 × min(max_delay, base_delay · 2ⁿ), as Jobwire
itself waits between a handler's attempts) or, when the 503 says so, its `Retry-After` (capped).
A request that was never sent (the connection was refused) may always be tried again; one that
may have reached the server only when sending it twice cannot do anything twice (`repeatable`).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime

import httpx

# Failures before a byte of the request left: nothing can have happened on the server.
NOT_SENT = (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout)


@dataclass(frozen=True)
class Retries:
    attempts: int = 4  # tries in all, the first included; 1 turns retrying off
    base_delay: float = 0.25
    max_delay: float = 5.0
    max_retry_after: float = 30.0  # the longest Retry-After honoured; a longer one is cut to this
    random: Callable[[], float] = field(default=random.random, repr=False, compare=False)

    def delay(self, attempt: int, reply: httpx.Response | Exception, repeatable: bool) -> float | None:
        """Seconds to wait before try `attempt + 1` (zero-based `attempt` just failed with
        `reply`), or None: give up."""
        if attempt + 1 >= self.attempts:
            return None
        if isinstance(reply, httpx.Response):
            if reply.status_code != 503 or not repeatable:
                return None
            retry_after = parse_retry_after(reply.headers.get("retry-after"))
            if retry_after is not None:
                return min(retry_after, self.max_retry_after)
        elif not (repeatable or isinstance(reply, NOT_SENT)):
            return None
        ceiling = min(self.max_delay, self.base_delay * 2**attempt)
        return ceiling * (0.5 + 0.5 * self.random())


def parse_retry_after(value: str | None, now: datetime | None = None) -> float | None:
    """`Retry-After` as seconds from now: delta-seconds or an HTTP date; None when absent or unreadable."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - (now or datetime.now(UTC))).total_seconds())
