"""Group: concurrent calls share one run_many; each caller still gets its own outcome."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import pytest

from app.services.grouping import Group


class Recorder:
    """run_many/run_one over ints: doubles them, refuses negatives, and records each run."""

    def __init__(self) -> None:
        self.runs: list[list[int]] = []  # each statement's items; a run_one is a list of one
        self.finished: list[list[int]] = []

    async def many(self, items: Sequence[int]) -> list[int]:
        self.runs.append(list(items))
        await asyncio.sleep(0.01)
        self.finished.append(list(items))
        if any(i < 0 for i in items):
            raise ValueError("a negative item")
        return [2 * i for i in items]

    async def one(self, item: int) -> int:
        [result] = await self.many([item])
        return result


async def test_calls_arriving_while_a_statement_runs_share_the_next_one() -> None:
    r = Recorder()
    group = Group(r.many, r.one, max_running=2)
    assert await asyncio.gather(*(group(i) for i in range(20))) == [2 * i for i in range(20)]
    assert r.runs == [[0], list(range(1, 20))]


async def test_a_steady_stream_of_callers_is_served_one_statement_at_a_time() -> None:
    # Eight callers, each calling again as soon as it is answered. With two statements allowed
    # at once, each arrival during a large statement started a second one for itself alone.
    r = Recorder()
    running = peak = 0

    async def many(items: Sequence[int]) -> list[int]:
        nonlocal running, peak
        running += 1
        peak = max(peak, running)
        try:
            return await r.many(items)
        finally:
            running -= 1

    async def one(item: int) -> int:
        [result] = await many([item])
        return result

    group = Group(many, one, max_running=2)

    async def caller(base: int) -> None:
        for i in range(5):
            assert await group(base + i) == 2 * (base + i)

    await asyncio.gather(*(caller(100 * c) for c in range(8)))
    assert sorted(i for run in r.runs for i in run) == sorted(100 * c + i for c in range(8) for i in range(5))
    assert peak == 1
    assert len(r.runs) <= 12  # 40 calls; alone, each would be a statement


async def test_a_statement_running_past_overlap_after_lets_the_next_one_start_beside_it() -> None:
    r = Recorder()
    stalled = asyncio.Event()

    async def many(items: Sequence[int]) -> list[int]:
        if 0 in items:
            await stalled.wait()  # waiting on a lock, say
        return await r.many(items)

    async def one(item: int) -> int:
        [result] = await many([item])
        return result

    group = Group(many, one, max_running=2, overlap_after=0.03)
    first = asyncio.create_task(group(0))
    await asyncio.sleep(0.005)
    assert await asyncio.wait_for(asyncio.gather(group(1), group(2)), 1) == [2, 4]  # while 0 stalls
    stalled.set()
    assert await first == 0
    assert r.runs == [[1, 2], [0]]


async def test_a_statement_takes_at_most_max_items() -> None:
    r = Recorder()
    group = Group(r.many, r.one, max_items=5, max_running=1)
    await asyncio.gather(*(group(i) for i in range(12)))
    assert r.runs == [[0], [1, 2, 3, 4, 5], [6, 7, 8, 9, 10], [11]]


async def test_a_failed_group_runs_each_item_alone_and_only_the_bad_one_fails() -> None:
    r = Recorder()
    group = Group(r.many, r.one, max_running=1)
    results = await asyncio.gather(*(group(i) for i in [1, 2, -3, 4]), return_exceptions=True)
    assert results[:2] == [2, 4] and results[3] == 8
    assert isinstance(results[2], ValueError)
    assert r.runs == [[1], [2, -3, 4], [2], [-3], [4]]


async def test_a_caller_cancelled_before_its_statement_starts_is_not_run() -> None:
    r = Recorder()
    group = Group(r.many, r.one, max_running=1)
    first = asyncio.create_task(group(1))
    waiting = asyncio.create_task(group(2))
    kept = asyncio.create_task(group(3))
    await asyncio.sleep(0)  # all three queued; the first one's statement under way
    waiting.cancel()
    assert await first == 2 and await kept == 6
    with pytest.raises(asyncio.CancelledError):
        await waiting
    assert r.runs == [[1], [3]]


async def test_a_statement_under_way_completes_when_its_caller_is_cancelled() -> None:
    r = Recorder()
    group = Group(r.many, r.one)
    call = asyncio.create_task(group(7))
    await asyncio.sleep(0)
    call.cancel()
    with pytest.raises(asyncio.CancelledError):
        await call
    await asyncio.sleep(0.05)
    assert r.finished == [[7]]  # ran to its end: the write it made is not left half-known


async def test_an_unreachable_database_fails_the_whole_group_without_a_statement_per_item() -> None:
    from app.domain.errors import DatabaseUnavailable

    r = Recorder()

    async def many(items: Sequence[int]) -> list[int]:
        r.runs.append(list(items))
        await asyncio.sleep(0.01)
        raise DatabaseUnavailable("connection refused")

    async def one(item: int) -> int:
        [result] = await many([item])
        return result

    group = Group(many, one)
    outcomes = await asyncio.gather(*(group(i) for i in range(10)), return_exceptions=True)
    assert all(isinstance(o, DatabaseUnavailable) for o in outcomes)
    assert r.runs == [[0], list(range(1, 10))]  # the lone first call, then the group: nothing item by item
