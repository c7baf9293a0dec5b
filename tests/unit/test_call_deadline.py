"""A call's deadline: the claim's, unless the database says heartbeats moved it."""

from __future__ import annotations

import asyncio

import pytest

from app.delivery import dispatch
from app.delivery.dispatch import _within_deadline
from app.delivery.transport import DeadlineExceeded


async def reply_after(seconds: float) -> str:
    await asyncio.sleep(seconds)
    return "reply"


def probe_answering(*answers: float | None):
    asked: list[float | None] = []

    async def probe() -> float | None:
        asked.append(answers[len(asked)])
        return asked[-1]

    probe.asked = asked  # type: ignore[attr-defined]
    return probe


async def test_a_reply_before_the_deadline_asks_nothing() -> None:
    probe = probe_answering()
    assert await _within_deadline(reply_after(0.01), 1.0, probe) == "reply"
    assert probe.asked == []  # type: ignore[attr-defined]


async def test_without_a_probe_the_claims_deadline_ends_the_call() -> None:
    with pytest.raises(DeadlineExceeded):
        await _within_deadline(reply_after(1.0), 0.05, None)


async def test_the_call_waits_while_the_deadline_moved_then_gets_its_reply() -> None:
    probe = probe_answering(0.1, 0.1)
    assert await _within_deadline(reply_after(0.25), 0.05, probe) == "reply"
    assert probe.asked == [0.1, 0.1]  # type: ignore[attr-defined]


@pytest.mark.parametrize("answer", [0.0, -0.5, None], ids=["passed", "long-passed", "no-longer-processing"])
async def test_the_call_is_cancelled_once_the_deadline_has_passed(answer: float | None) -> None:
    cancelled = asyncio.Event()

    async def hangs() -> str:
        try:
            await asyncio.sleep(10)
        except asyncio.CancelledError:
            cancelled.set()
            raise
        return "reply"

    with pytest.raises(DeadlineExceeded):
        await _within_deadline(hangs(), 0.05, probe_answering(0.05, answer))
    assert cancelled.is_set()


async def test_a_probe_that_fails_keeps_the_call_going_and_asks_again(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(dispatch, "PROBE_RETRY", 0.05)
    tries = 0

    async def database_away() -> float | None:
        nonlocal tries
        tries += 1
        raise ConnectionError("database away")

    assert await _within_deadline(reply_after(0.2), 0.05, database_away) == "reply"
    assert tries >= 2
