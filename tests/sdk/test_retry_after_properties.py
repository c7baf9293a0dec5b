"""Behaviour 10: the SDK's Retry-After parsing never raises on a server's header (property tests,
as tests/unit/test_parsers_properties.py tests the service's own parser). For any text it gives a
delay in [0, cap] or None; delta-seconds are their ASCII value capped, an HTTP date the time until
it capped; digits that are not ASCII are no number ('²' is a str.isdigit(), and float('²') raised
ValueError here before; a 20-digit year raised OverflowError)."""

from __future__ import annotations

import string
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import httpx
from hypothesis import example, given
from hypothesis import strategies as st

import jobwire
from jobwire._retry import parse_retry_after

NOW = datetime(2026, 11, 29, 12, 0, 0, tzinfo=UTC)
CAP = 30.0
UNICODE_DIGITS = "١٢٣۴５０߂²³¹⁵₂①"

any_text = st.text(st.characters(exclude_categories=()))  # lone surrogates included
ascii_digits = st.text(string.digits, min_size=1, max_size=30)
not_ascii_digits = st.text(st.sampled_from(UNICODE_DIGITS + string.digits), min_size=1, max_size=6).filter(
    lambda s: not s.isascii())


@given(any_text)
@example("²")
@example("١٢")
@example("Mon, 01 Jan 99999999999999999999 00:00:00 GMT")  # a 20-digit year: OverflowError
@example("Mon, 01 Jan 2020 99999999999999999999:00:00 GMT")
@example("Mon, 01 Jan 0001 00:00:00 +2359")
@example("9" * 5000)
def test_any_retry_after_is_seconds_within_the_cap_or_absent(value: str) -> None:
    delay = parse_retry_after(value, NOW, CAP)
    assert delay is None or (type(delay) is float and 0.0 <= delay <= CAP)


@given(ascii_digits)
def test_an_ascii_delta_seconds_retry_after_is_its_value_capped(digits: str) -> None:
    assert parse_retry_after(f" {digits} ", NOW, CAP) == min(float(int(digits)), CAP)


@given(not_ascii_digits)
def test_a_retry_after_of_digits_that_are_not_ascii_is_absent(digits: str) -> None:
    assert parse_retry_after(digits, NOW, CAP) is None


@given(st.integers(-10**6, 10**6), st.booleans())
def test_an_http_date_retry_after_is_the_time_until_it_capped(seconds: int, gmt: bool) -> None:
    when = NOW + timedelta(seconds=seconds)
    assert parse_retry_after(format_datetime(when, usegmt=gmt), NOW, CAP) == min(max(float(seconds), 0.0), CAP)


@given(any_text)
@example("²")
def test_the_retry_policy_waits_within_its_bounds_whatever_the_503_says(value: str) -> None:
    policy = jobwire.Retries(attempts=3, base_delay=0.25, max_delay=5.0, max_retry_after=CAP)
    try:
        busy = httpx.Response(503, headers={"retry-after": value})
    except (UnicodeEncodeError, ValueError):  # text httpx itself cannot put in a header
        return
    delay = policy.delay(0, busy)
    assert delay is not None and 0.0 <= delay <= CAP
    assert policy.delay(2, busy) is None  # the third try was the last


def test_retry_after_is_read_as_seconds_or_an_http_date() -> None:
    assert parse_retry_after("5", NOW) == 5.0
    assert parse_retry_after("Sun, 29 Nov 2026 12:00:07 GMT", NOW) == 7.0
    assert parse_retry_after("Sun, 29 Nov 2026 11:00:00 GMT", NOW) == 0.0  # already past
    assert parse_retry_after("soon", NOW) is None and parse_retry_after(None, NOW) is None
    assert parse_retry_after("3600", NOW, cap=30.0) == 30.0
    policy = jobwire.Retries(attempts=3, max_retry_after=30.0, random=lambda: 1.0)
    assert policy.delay(0, httpx.Response(503, headers={"retry-after": "3600"})) == 30.0  # capped
    assert policy.delay(1, httpx.ConnectError("refused")) == 0.5  # no Retry-After: the backoff
