"""Retry backoff (exponential, jittered, capped) and Retry-After parsing. Randomness and time injected."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import pytest

from app.domain.retry import RetryPolicy, parse_retry_after

NOW = datetime(2026, 11, 29, 12, 0, 0, tzinfo=UTC)


def top(_: object = None) -> float:
    return 1.0


def bottom(_: object = None) -> float:
    return 0.0


def test_backoff_ceiling_doubles_per_attempt_from_the_base_delay() -> None:
    policy = RetryPolicy(base_delay=1.0, max_delay=3600.0)
    assert [policy.delay(a, top) for a in range(6)] == [1.0, 2.0, 4.0, 8.0, 16.0, 32.0]


def test_backoff_is_capped_at_max_delay() -> None:
    policy = RetryPolicy(base_delay=1.0, max_delay=3600.0)
    assert policy.delay(12, top) == 3600.0  # 2**12 = 4096 > 3600
    assert policy.delay(40, top) == 3600.0


def test_backoff_for_a_huge_attempt_number_neither_overflows_nor_exceeds_the_cap() -> None:
    policy = RetryPolicy(base_delay=1.0, max_delay=3600.0)
    assert policy.delay(10**6, top) == 3600.0
    assert policy.delay(10**6, bottom) == 1800.0


def test_jitter_draws_between_half_the_ceiling_and_the_ceiling() -> None:
    policy = RetryPolicy(base_delay=2.0, max_delay=100.0)
    assert policy.delay(3, bottom) == 8.0  # ceiling 16
    assert policy.delay(3, top) == 16.0
    assert policy.delay(3, lambda: 0.5) == 12.0


def test_jittered_delays_stay_within_bounds_for_many_draws() -> None:
    rng = random.Random(1234)
    policy = RetryPolicy(base_delay=1.0, max_delay=60.0)
    for attempt in range(12):
        ceiling = min(60.0, 2.0**attempt)
        for _ in range(200):
            delay = policy.delay(attempt, rng.random)
            assert ceiling / 2 <= delay <= ceiling


def test_backoff_never_collapses_to_zero_with_a_positive_base() -> None:
    assert RetryPolicy(base_delay=0.05, max_delay=0.2).delay(0, bottom) == pytest.approx(0.025)


def test_retry_after_delta_seconds_is_used_as_is() -> None:
    assert parse_retry_after("120", NOW, cap=3600) == 120.0
    assert parse_retry_after(" 7 ", NOW, cap=3600) == 7.0
    assert parse_retry_after("0", NOW, cap=3600) == 0.0


def test_retry_after_delta_seconds_is_capped() -> None:
    assert parse_retry_after("999999999", NOW, cap=3600) == 3600.0


def test_retry_after_http_date_gives_seconds_until_that_date() -> None:
    value = format_datetime(NOW + timedelta(seconds=90), usegmt=True)
    assert parse_retry_after(value, NOW, cap=3600) == 90.0


def test_retry_after_http_date_is_capped() -> None:
    value = format_datetime(NOW + timedelta(days=3), usegmt=True)
    assert parse_retry_after(value, NOW, cap=3600) == 3600.0


def test_retry_after_http_date_in_the_past_means_now() -> None:
    value = format_datetime(NOW - timedelta(minutes=5), usegmt=True)
    assert parse_retry_after(value, NOW, cap=3600) == 0.0


@pytest.mark.parametrize("value", [None, "", "   ", "soon", "-5", "1.5", "Wed, 99 Foo 2026 00:00:00 GMT"])
def test_unusable_retry_after_is_ignored(value: str | None) -> None:
    assert parse_retry_after(value, NOW, cap=3600) is None
