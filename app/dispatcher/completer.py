"""Outcomes are written in batches: whatever finished while the previous write ran."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Generic, TypeVar

log = logging.getLogger(__name__)
T = TypeVar("T")


class Completer(Generic[T]):
    """Buffers items and hands them to `flush` in batches, one flush at a time.

    A flush waits `linger` seconds for company unless `max_batch` items are already waiting or
    `expected()` says that none is on its way (the dispatcher: no call in flight but those whose
    items are here), so a busy node writes one statement per batch and a lone item, the last of
    a drain or a job on a quiet node (each level of a workflow), is written at once.
    """

    def __init__(self, flush: Callable[[list[T]], Awaitable[None]], linger: float = 0.002,
                 max_batch: int = 500, retry_delay: float = 0.5, close_attempts: int = 10,
                 expected: Callable[[], bool] = lambda: True) -> None:
        self._flush = flush
        self._linger = linger
        self._expected = expected
        self._max_batch = max_batch
        self._buffer: list[T] = []
        self._ready = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._closing = False
        self._retry_delay = retry_delay
        self._close_attempts = close_attempts

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name="jobwire-completer")

    def add(self, item: T) -> None:
        self._buffer.append(item)
        self._ready.set()

    @property
    def pending(self) -> int:
        return len(self._buffer)

    def buffered(self) -> list[T]:
        """Items not yet written (including the batch being written now)."""
        return list(self._buffer)

    async def _run(self) -> None:
        while True:
            await self._ready.wait()
            if len(self._buffer) < self._max_batch and not self._closing and self._expected():
                await asyncio.sleep(self._linger)
            self._ready.clear()
            failures = 0
            while self._buffer:
                batch = self._buffer[: self._max_batch]
                try:
                    await self._flush(batch)
                except Exception as exc:
                    # Keep the batch and try again: an outcome dropped here would leave its
                    # attempt to the deadline scan, and the work would run twice.
                    failures += 1
                    if self._closing and failures >= self._close_attempts:
                        log.error("giving up on %d unwritten outcomes at shutdown: %s", len(self._buffer), exc)
                        return
                    log.warning("writing %d outcomes failed (%s); retrying", len(batch), exc)
                    await asyncio.sleep(min(self._retry_delay * failures, 5.0))
                    continue
                failures = 0
                del self._buffer[: len(batch)]
            if self._closing:
                return

    async def close(self) -> None:
        """Write everything still buffered, then stop."""
        self._closing = True
        self._ready.set()
        if self._task is not None:
            await self._task
