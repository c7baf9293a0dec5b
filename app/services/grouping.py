"""Concurrent calls of one statement, run as one statement (group commit in the application).

Sixteen clients enqueueing one job each cost sixteen statements, sixteen commits and, for an
enqueue, sixteen NOTIFYs; PostgreSQL serialises the commits of notifying transactions, so they
cannot share a WAL flush. A Group runs the first call at once; calls that arrive while a
statement of the group is under way wait, and the next statement takes all of them (up to
`max_items`). Alone, a call runs as it would without the group; under load, each statement
carries what accumulated during the last one.

One statement at a time: with two, the clients split into one large batch and a trickle of
statements of one item each, every arrival during the large one starting the second at once
(16 clients: half the statements carried one job). Only a statement that has run for
`overlap_after` seconds (waiting on a lock, a slow server) lets another start beside it, up to
`max_running`, so one stalled statement does not hold every caller.

Each caller gets exactly the outcome it would have had alone: a group whose statement raises
(one item refused) runs each of its items again alone, each its own statement (the failed one
changed nothing: a statement is atomic). Only an unreachable database fails the whole group at
once: every caller gets DatabaseUnavailable, and the database that is down is not sent one
statement per item. A statement is awaited until it ends
even if its callers are cancelled, so a caller that goes away never leaves a write half-known.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import Generic, TypeVar

from app.domain.errors import DatabaseUnavailable

T = TypeVar("T")
R = TypeVar("R")


class Group(Generic[T, R]):
    def __init__(
        self,
        run_many: Callable[[Sequence[T]], Awaitable[Sequence[R]]],
        run_one: Callable[[T], Awaitable[R]],
        *,
        max_items: int = 256,
        max_running: int = 2,
        overlap_after: float = 0.05,
    ) -> None:
        """run_many(items) → one result per item, in order, in one statement; run_one(item) →
        the item alone, as a caller without the group would run it."""
        self._run_many = run_many
        self._run_one = run_one
        self._max_items = max_items
        self._max_running = max_running
        self._overlap_after = overlap_after
        self._waiting: list[tuple[T, asyncio.Future[R]]] = []
        self._running = 0
        self._last_start = 0.0  # loop time at which the newest statement under way started
        self._recheck: asyncio.TimerHandle | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    async def __call__(self, item: T) -> R:
        future: asyncio.Future[R] = asyncio.get_running_loop().create_future()
        self._waiting.append((item, future))
        self._start()
        return await future

    def _start(self) -> None:
        loop = asyncio.get_running_loop()
        while self._waiting and self._running < self._max_running:
            if self._running and loop.time() - self._last_start < self._overlap_after:
                if self._recheck is None:  # the statement under way may stall: look again then
                    self._recheck = loop.call_at(self._last_start + self._overlap_after, self._rechecked)
                return
            batch = [(item, future) for item, future in self._waiting[:self._max_items] if not future.done()]
            del self._waiting[:self._max_items]
            if not batch:  # every caller of this batch was cancelled before it started
                continue
            self._running += 1
            self._last_start = loop.time()
            task = asyncio.create_task(self._run(batch))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    def _rechecked(self) -> None:
        self._recheck = None
        self._start()

    async def _run(self, batch: list[tuple[T, asyncio.Future[R]]]) -> None:
        try:
            if len(batch) == 1:
                await _settle(batch[0][1], self._run_one(batch[0][0]))
                return
            try:
                results = await self._run_many([item for item, _ in batch])
            except DatabaseUnavailable as exc:
                for _, future in batch:
                    if not future.done():
                        future.set_exception(DatabaseUnavailable(str(exc)))
                return
            except Exception:
                await asyncio.gather(*(_settle(future, self._run_one(item)) for item, future in batch))
                return
            for (_, future), result in zip(batch, results, strict=True):
                if not future.done():
                    future.set_result(result)
        finally:
            for _, future in batch:  # cancelled itself (the loop is closing): so are its callers
                if not future.done():
                    future.cancel()
            self._running -= 1
            self._start()


async def _settle(future: asyncio.Future[R], outcome: Awaitable[R]) -> None:
    try:
        result = await outcome
    except Exception as exc:
        if not future.done():
            future.set_exception(exc)
    else:
        if not future.done():
            future.set_result(result)
