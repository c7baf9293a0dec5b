"""How long the client waits before trying a request again, and how often: the policy, with no
I/O in it. (Whether a request may be tried again at all is `_resend.py`'s question.)

A try is repeated a bounded number of times, waiting an exponential backoff with jitter (between
½ and 1 × min(max_delay, base_delay · 2ⁿ), as Jobwire itself waits between a handler's attempts)
or, when a 503 says so, its `Retry-After` (capped).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime

import httpx


@dataclass(frozen=True, slots=True)
class Retries:
    attempts: int = 4  # tries in all, the first included; 1 turns retrying off
    base_delay: float = 0.25
    max_delay: float = 5.0
    max_retry_after: float = 30.0  # the longest Retry-After honoured; a longer one is cut to this
    random: Callable[[], float] = field(default=random.random, repr=False, compare=False)

    def delay(self, attempt: int, reply: httpx.Response | Exception) -> float | None:
        """Seconds to wait before try `attempt + 1` (zero-based `attempt` just failed with `reply`,
        a 503 or a transport failure), or None: the tries are spent."""
        if attempt + 1 >= self.attempts:
            return None
        if isinstance(reply, httpx.Response):
            retry_after = parse_retry_after(reply.headers.get("retry-after"), cap=self.max_retry_after)
            if retry_after is not None:
                return retry_after
        ceiling = min(self.max_delay, self.base_delay * 2.0 ** min(attempt, 62))
        return ceiling * (0.5 + 0.5 * self.random())


def parse_retry_after(value: str | None, now: datetime | None = None, cap: float = 30.0) -> float | None:
    """`Retry-After` as seconds from `now`, at most `cap`: delta-seconds or an HTTP date; None when
    absent or unreadable. Never raises, whatever a server sends."""
    if not value:
        return None
    value = value.strip()
    if not value.isascii():  # both forms are ASCII: '²' is a str.isdigit() but no number, nor is '١٢' 12
        return None
    if value.isdigit():
        return min(float(value), cap)  # float() takes any length of digits (int() refuses over 4,300)
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError, OverflowError):  # OverflowError: a 20-digit year
        return None
    if when.tzinfo is None:  # `-0000`: UTC, said without vouching for the zone
        when = when.replace(tzinfo=UTC)
    try:
        seconds = (when - (now or datetime.now(UTC))).total_seconds()
    except OverflowError:
        return None
    return min(max(seconds, 0.0), cap)
