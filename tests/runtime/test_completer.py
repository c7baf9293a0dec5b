"""The completer batches outcomes and never drops one because a write failed."""

from __future__ import annotations

import asyncio

from app.dispatcher.completer import Completer


async def test_outcomes_that_arrive_together_are_written_in_one_batch():
    batches: list[list[int]] = []

    async def flush(batch: list[int]) -> None:
        batches.append(batch)

    completer: Completer[int] = Completer(flush, linger=0.01)
    completer.start()
    for i in range(5):
        completer.add(i)
    await completer.close()
    assert batches == [[0, 1, 2, 3, 4]]


async def test_a_failed_write_is_retried_until_it_lands():
    attempts: list[list[int]] = []

    async def flush(batch: list[int]) -> None:
        attempts.append(list(batch))
        if len(attempts) < 3:
            raise ConnectionError("database away")

    completer: Completer[int] = Completer(flush, linger=0, retry_delay=0.01)
    completer.start()
    completer.add(1)
    completer.add(2)
    for _ in range(200):
        if len(attempts) >= 3:
            break
        await asyncio.sleep(0.01)
    await completer.close()
    assert attempts == [[1, 2], [1, 2], [1, 2]]
    assert completer.pending == 0


async def test_close_gives_up_after_bounded_attempts():
    calls = 0

    async def flush(_: list[int]) -> None:
        nonlocal calls
        calls += 1
        raise ConnectionError("database gone for good")

    completer: Completer[int] = Completer(flush, linger=0, retry_delay=0.001, close_attempts=3)
    completer.start()
    completer.add(1)
    await asyncio.wait_for(completer.close(), timeout=5)
    assert calls >= 3 and completer.pending == 1


async def test_a_lone_outcome_is_written_at_once_when_no_other_is_on_its_way():
    """The dispatcher says whether a call is still under way; with none, the linger would wait for
    nothing (a job on a quiet node, each level of a workflow) and is skipped."""
    batches: list[list[int]] = []
    running = True

    async def flush(batch: list[int]) -> None:
        batches.append(batch)

    completer: Completer[int] = Completer(flush, linger=3.0, expected=lambda: running)
    completer.start()
    running = False
    completer.add(1)
    for _ in range(200):  # written within 2 s: with the linger it would take 3
        if batches:
            break
        await asyncio.sleep(0.01)
    assert batches == [[1]]
    running = True  # a call under way: the next lone outcome waits for its company
    completer.add(2)
    await asyncio.sleep(0.2)
    assert batches == [[1]]
    completer.add(3)
    await completer.close()
    assert batches == [[1], [2, 3]]
