"""The toolkit's memory of the messages it took (jobwire.handler._replay): a message is taken
once; its entry goes when its timestamp leaves the tolerance, and never more than `capacity`
are kept, the oldest going first. Time is a parameter: nothing here waits."""

from __future__ import annotations

import hashlib

import pytest

from jobwire.handler._replay import ReplayGuard
from jobwire.handler._signature import Signed

NOW = 1_800_000_000.0


def message(n: int, timestamp: float = NOW) -> Signed:
    return Signed(int(timestamp), hashlib.sha256(f"msg-{n}".encode()).digest())


def test_a_message_is_taken_once_and_refused_after() -> None:
    guard = ReplayGuard(tolerance=300)
    assert guard.first_time(message(1), NOW) is True
    assert guard.first_time(message(1), NOW + 299) is False
    assert guard.first_time(message(2), NOW + 299) is True


def test_an_entry_is_forgotten_once_its_timestamp_is_out_of_tolerance() -> None:
    guard = ReplayGuard(tolerance=300)
    for n in range(50):
        guard.first_time(message(n, NOW + n), NOW + n)
    assert len(guard) == 50

    guard.first_time(message(1000, NOW + 320), NOW + 320)  # 0…19 are out of tolerance now

    assert len(guard) == 31
    assert guard.first_time(message(20, NOW + 20), NOW + 320) is False  # still within it: remembered


def test_a_message_signed_ahead_of_this_clock_is_remembered_until_its_own_tolerance_ends() -> None:
    guard = ReplayGuard(tolerance=300)
    ahead = message(1, NOW + 250)
    assert guard.first_time(ahead, NOW) is True
    assert guard.first_time(ahead, NOW + 540) is False  # 290 s after its timestamp: still a replay
    guard.first_time(message(2, NOW + 551), NOW + 551)
    assert len(guard) == 1  # it is out of tolerance: the timestamp check refuses a replay of it now


@pytest.mark.parametrize("capacity", [1, 10])
def test_never_more_than_the_capacity_are_kept_the_oldest_going_first(capacity: int) -> None:
    guard = ReplayGuard(tolerance=300, capacity=capacity)
    for n in range(capacity * 5):
        assert guard.first_time(message(n), NOW) is True
        assert len(guard) <= capacity
    assert guard.first_time(message(capacity * 5 - 1), NOW) is False  # the newest are kept
    assert guard.first_time(message(0), NOW) is True  # the oldest went first


def test_a_capacity_below_one_is_refused() -> None:
    with pytest.raises(ValueError):
        ReplayGuard(capacity=0)
