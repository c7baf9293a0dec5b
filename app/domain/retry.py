"""Retry backoff: exponential with full jitter, capped. Randomness is injected."""

from __future__ import annotations

import email.utils
import random as _random
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    base_delay: float = 1.0
    max_delay: float = 3600.0

    def delay(self, attempt: int, rand: Callable[[], float] = _random.random) -> float:
        """Seconds to wait before the attempt after `attempt` (zero-based).

        The ceiling doubles per attempt (base, 2·base, 4·base, …, capped at max_delay); the
        delay is drawn in [ceiling/2, ceiling] so retries spread out but never collapse to 0.
        """
        ceiling = min(self.max_delay, self.base_delay * (2.0 ** min(attempt, 62)))
        return ceiling / 2 + rand() * ceiling / 2


def parse_retry_after(value: str | None, now: datetime, cap: float) -> float | None:
    """Seconds from a Retry-After header (delta-seconds or an HTTP date), capped; None if unusable."""
    if not value:
        return None
    value = value.strip()
    if not value.isascii():  # both forms are ASCII: '١٢' is not 12 seconds, nor is '²' a number
        return None
    if value.isdigit():
        return min(float(value), cap)  # float() takes any length (int() refuses over 4300 digits)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError, OverflowError):  # OverflowError: a 20-digit year
        return None
    if when.tzinfo is None:
        return None
    return min(max((when - now).total_seconds(), 0.0), cap)
