"""Running a unit of work again when a concurrent transaction beat it (serialization failure,
deadlock): the database rolled it back whole, so running it again is safe."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable
from typing import TypeVar

from app.domain.errors import DatabaseContention

R = TypeVar("R")


async def retry_contention(work: Callable[[], Awaitable[R]], *, attempts: int = 4, base_delay: float = 0.01,
                           rand: Callable[[], float] = random.random) -> R:
    """`work()`, tried up to `attempts` times while it raises DatabaseContention, with a short
    jittered pause between tries (base_delay, doubling); the last DatabaseContention propagates
    (the API answers 503 with Retry-After)."""
    for attempt in range(attempts):
        try:
            return await work()
        except DatabaseContention:
            if attempt + 1 >= attempts:
                raise
            await asyncio.sleep(base_delay * 2**attempt * (0.5 + rand()))
    raise AssertionError("unreachable")  # attempts < 1
