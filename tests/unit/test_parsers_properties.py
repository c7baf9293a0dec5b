"""Property tests (hypothesis) of every parser that reads crafted input: listing cursors, cron
expressions and time zones, a handler's Retry-After and Date headers, callback tokens, the
traceparent and Authorization headers. For any input each returns a valid value or fails in its
documented way (ValidationFailed naming `cursor`, CronError, None, Unauthenticated), never with
another exception, which the API would answer as a 500 or the dispatcher would log as a crash.
Numbers are ASCII digits only: '١٢' (Arabic-Indic) and '²' (superscript two, a str.isdigit()
but not an int()) are not numbers anywhere."""

from __future__ import annotations

import base64
import string
import uuid
from datetime import UTC, datetime, timedelta, timezone
from email.utils import format_datetime
from typing import Any
from uuid import UUID

import orjson
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from app.api.auth import bearer_from, is_bootstrap_key
from app.domain import cron
from app.domain.errors import ValidationFailed
from app.domain.executions import Execution, JobType, Progress
from app.domain.logs import LogLevel, StoredLog
from app.domain.retry import parse_retry_after
from app.domain.signing import callback_token, new_server_key, verify_callback_token
from app.domain.states import JobState
from app.domain.tracing import valid_traceparent
from app.delivery.dispatch import _reply_time
from app.delivery.transport import Reply
from app.services.executions import decode_cursor, decode_log_cursor, encode_cursor, encode_log_cursor

NOW = datetime(2026, 11, 29, 12, 0, 0, tzinfo=UTC)
CAP = 3600.0
# Characters that are str.isdigit() but not ASCII: int() takes the first three, not the others.
UNICODE_DIGITS = "١٢٣۴５０߂²³¹⁵₂①"

# Any str, lone surrogates included (hypothesis leaves them out unless asked).
any_text = st.text(st.characters(exclude_categories=()))
ascii_digits = st.text(string.digits, min_size=1, max_size=30)
not_ascii_digits = st.text(st.sampled_from(UNICODE_DIGITS + string.digits), min_size=1, max_size=6).filter(
    lambda s: not s.isascii())

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**63), 2**64 - 1) | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(), children, max_size=4),
    max_leaves=12,
)
aware_times = st.datetimes(timezones=st.timezones() | st.just(UTC))
time_texts = (aware_times.map(datetime.isoformat) | st.datetimes().map(datetime.isoformat) | st.sampled_from(
    ["0001-01-01T00:00:00+14:00", "9999-12-31T23:59:59-23:59", "٢٠٢٠-01-01T00:00:00+00:00"]))
uuid_texts = st.uuids().flatmap(lambda u: st.sampled_from(
    [str(u), str(u).upper(), u.hex, f"{{{u}}}", f"urn:uuid:{u}", str(u).replace("0", "٠")]))
# The shapes near a real cursor: pairs of a time-like and an id-like part, any JSON in either place.
cursor_like = st.one_of(
    st.tuples(time_texts | json_values, uuid_texts | json_values).map(list),
    st.tuples(time_texts, uuid_texts).map(lambda p: {p[0]: 1, p[1]: 2}),
    st.tuples(time_texts, uuid_texts).map(lambda p: [*p, None]),
    json_values,
)


def b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def execution_at(created_at: datetime, execution_id: UUID) -> Execution:
    return Execution(
        id=execution_id, job_id="j", job_type=JobType.DELAYED, handler="h", queue="default",
        state=JobState.ENQUEUED, attempt=0, max_attempts=5, priority=0, stateful=False, payload=None,
        parameters=None, metadata=None, result=None, progress=Progress(), scheduled_at=created_at,
        created_at=created_at, started_at=None, completed_at=None, deadline_at=None, locked_by=None,
        last_error=None, error_type=None)


# --- execution listing cursor ------------------------------------------------------------

def decoded_or_refused(cursor: str) -> tuple[datetime, UUID] | None:
    try:
        when, id_ = decode_cursor(cursor)
    except ValidationFailed as exc:
        assert [e.field for e in exc.errors] == ["cursor"]
        return None
    assert isinstance(when, datetime) and when.utcoffset() is not None
    when.astimezone(UTC)  # representable in UTC, as the database needs it
    assert isinstance(id_, UUID)
    return when, id_


@given(any_text)
def test_any_text_as_a_cursor_decodes_or_is_refused_as_cursor(cursor: str) -> None:
    decoded_or_refused(cursor)


@given(st.binary())
def test_any_bytes_as_a_cursor_decode_or_are_refused_as_cursor(raw: bytes) -> None:
    decoded_or_refused(b64(raw))


@given(cursor_like)
@example(["2020-01-01T00:00:00+00:00", 5])  # UUID(5): AttributeError, a 500
@example(["2020-01-01T00:00:00+00:00", ["00000000-0000-0000-0000-000000000000"]])
@example({"2020-01-01T00:00:00+00:00": 1, "00000000-0000-0000-0000-000000000000": 2})  # unpacked to its keys
def test_any_json_as_a_cursor_is_a_time_and_id_pair_or_is_refused(value: Any) -> None:
    decoded = decoded_or_refused(b64(orjson.dumps(value)))
    if decoded is not None:
        assert isinstance(value, list) and len(value) == 2 and all(isinstance(part, str) for part in value)


@given(st.text(st.sampled_from('[]{}",:0123456789.eE+-tfnrul '), max_size=60))
def test_json_like_text_as_a_cursor_decodes_or_is_refused(raw: str) -> None:
    decoded_or_refused(b64(raw.encode()))


fixed_offsets = st.integers(-86399, 86399).map(lambda s: timezone(timedelta(seconds=s)))


@given(st.datetimes(timezones=st.just(UTC) | fixed_offsets), st.uuids())
def test_an_issued_cursor_decodes_to_its_time_and_id(created_at: datetime, execution_id: UUID) -> None:
    try:
        created_at.astimezone(UTC)
    except OverflowError:  # no stored time is outside UTC's years
        return
    when, id_ = decode_cursor(encode_cursor(execution_at(created_at, execution_id)))
    assert (when, id_) == (created_at, execution_id)
    assert when.utcoffset() == created_at.utcoffset()


# --- log cursor --------------------------------------------------------------------------

def log_id_or_refused(cursor: str) -> int | None:
    try:
        after = decode_log_cursor(cursor)
    except ValidationFailed as exc:
        assert [e.field for e in exc.errors] == ["cursor"]
        return None
    assert type(after) is int and 0 <= after < 2**63
    return after


@given(any_text)
def test_any_text_as_a_log_cursor_decodes_or_is_refused_as_cursor(cursor: str) -> None:
    log_id_or_refused(cursor)


@given(st.binary())
def test_any_bytes_as_a_log_cursor_decode_or_are_refused_as_cursor(raw: bytes) -> None:
    log_id_or_refused(b64(raw))


@given(json_values | st.dictionaries(st.just("log"), json_values, min_size=1))
def test_any_json_as_a_log_cursor_decodes_or_is_refused_as_cursor(value: Any) -> None:
    log_id_or_refused(b64(orjson.dumps(value)))


@given(st.integers(0, 2**63 - 1))
def test_an_issued_log_cursor_decodes_to_its_id(log_id: int) -> None:
    entry = StoredLog(id=log_id, attempt=1, level=LogLevel.INFO, message="m", logged_at=NOW)
    assert decode_log_cursor(encode_log_cursor(entry)) == log_id


# --- cron expressions and time zones -----------------------------------------------------

cron_tokens = st.one_of(
    st.sampled_from(["*", "?", "L", "W", "LW", "5L", "#", "JAN", "mon", "Sun", "ſun", "FRı", "-", "/", ","]),
    st.integers(0, 70).map(str),
    not_ascii_digits,
    ascii_digits,
    st.text(max_size=3),
)
cron_fields = st.lists(st.tuples(cron_tokens, st.sampled_from(["", "-", "/", ","])), min_size=1, max_size=4).map(
    lambda parts: "".join(t + sep for t, sep in parts).rstrip("-/,") or "*")
cron_texts = st.lists(cron_fields, min_size=4, max_size=7).map(" ".join)


def parsed_or_refused(text: str) -> cron.CronExpression | None:
    try:
        expr = cron.parse(text)
    except cron.CronError:
        return None
    assert expr.text.isascii()  # what is stored and shown is what was accepted: plain ASCII
    assert expr.next_wall_time(datetime(2000, 1, 1)) is not None
    return expr


@given(any_text)
@example("0 0 ² * *")
@example("*/² * * * *")
@example("0 0 ١ * *")
@example("0 " + "9" * 5000 + " * * *")  # past int()'s 4300-digit limit: ValueError
def test_any_text_as_a_cron_expression_parses_or_is_a_cron_error(text: str) -> None:
    parsed_or_refused(text)


@given(cron_texts)
@example("0 ٥ * * *")
@example("0 5 * * ſun")
def test_cron_shaped_text_parses_or_is_a_cron_error(text: str) -> None:
    parsed_or_refused(text)


@given(st.sampled_from(["seconds", "minutes", "hours", "dom", "month", "dow"]), not_ascii_digits)
def test_a_digit_that_is_not_ascii_is_not_a_cron_number(field: str, digits: str) -> None:
    fields = {"seconds": "0", "minutes": "0", "hours": "0", "dom": "1", "month": "1", "dow": "*"}
    for text in (digits, f"{digits}-5", f"*/{digits}", f"1-{digits}"):
        with pytest.raises(cron.CronError):
            cron.parse(" ".join({**fields, field: text}.values()))


@given(st.integers(0, 59), st.integers(0, 59), st.integers(0, 23), st.integers(1, 28), st.integers(1, 12),
       st.integers(0, 7))
def test_ascii_numbers_in_range_parse_to_those_values(s: int, m: int, h: int, dom: int, month: int,
                                                      dow: int) -> None:
    expr = cron.parse(f"{s} {m} {h} {dom} {month} {dow}")
    assert (expr.seconds, expr.minutes, expr.hours, expr.days, expr.months) == (
        {s}, {m}, {h}, {dom}, {month})
    assert expr.weekdays == {dow % 7}


@given(any_text | st.sampled_from(["Europe/Berlin", "UTC", "../etc/passwd", "Europe/Berlin\x00", "a" * 300,
                                   "tzdata.zoneinfo", "Europe.Berlin/x", "Europe/"]))
def test_any_text_as_a_time_zone_is_a_zone_or_a_cron_error(name: str) -> None:
    try:
        cron.zone(name)
    except cron.CronError:
        pass


# --- a handler's Retry-After and Date ----------------------------------------------------

@given(any_text)
@example("²")
@example("١٢")
@example("Mon, 01 Jan 99999999999 00:00:00 GMT")  # OverflowError in parsedate_to_datetime
@example("Mon, 01 Jan 2020 99999999999999999999:00:00 GMT")
def test_any_retry_after_is_seconds_within_the_cap_or_absent(value: str) -> None:
    delay = parse_retry_after(value, NOW, CAP)
    assert delay is None or (type(delay) is float and 0.0 <= delay <= CAP)


@given(ascii_digits)
def test_an_ascii_delta_seconds_retry_after_is_its_value_capped(digits: str) -> None:
    assert parse_retry_after(digits, NOW, CAP) == min(float(int(digits)), CAP)


@given(not_ascii_digits)
def test_a_retry_after_of_digits_that_are_not_ascii_is_absent(digits: str) -> None:
    assert parse_retry_after(digits, NOW, CAP) is None


@given(st.integers(-10**6, 10**6), st.booleans())
def test_an_http_date_retry_after_is_the_time_until_it_capped(seconds: int, gmt: bool) -> None:
    when = NOW + timedelta(seconds=seconds)
    assert parse_retry_after(format_datetime(when, usegmt=gmt), NOW, CAP) == min(max(float(seconds), 0.0), CAP)


@given(st.text(st.sampled_from(UNICODE_DIGITS), min_size=1, max_size=1))
def test_an_http_date_with_digits_that_are_not_ascii_is_absent(digit: str) -> None:
    assert parse_retry_after(f"Sun, 29 Nov 2026 12:00:0{digit} GMT", NOW, CAP) is None


def reply_dated(date: str) -> Reply:
    return Reply(status=503, reason="Service Unavailable", body=b"", headers={"date": date})


@given(any_text)
@example("Mon, 01 Jan 99999999999 00:00:00 GMT")  # OverflowError in parsedate_to_datetime
@example("Sun, 29 Nov ٢٠٢٦ 12:00:00 GMT")
def test_any_date_header_gives_an_aware_reply_time(date: str) -> None:
    before = datetime.now(UTC)
    when = _reply_time(reply_dated(date))
    assert when.utcoffset() is not None
    if not date.isascii():  # an HTTP date is ASCII: anything else is no Date header at all
        assert before <= when <= datetime.now(UTC)


@given(st.datetimes(min_value=datetime(1900, 1, 1), max_value=datetime(9999, 1, 1)).map(
    lambda d: d.replace(microsecond=0, tzinfo=UTC)))
def test_an_http_date_header_is_the_reply_time(when: datetime) -> None:
    assert _reply_time(reply_dated(format_datetime(when, usegmt=True))) == when


# --- callback tokens, traceparent, Authorization -----------------------------------------

SERVER_KEY = new_server_key()
EXECUTION = uuid.UUID("00000000-0000-0000-0000-000000000001")


@given(any_text)
@example("1.\ud800")  # a lone surrogate: UnicodeEncodeError
def test_any_text_as_a_callback_token_is_an_attempt_or_not_valid(token: str) -> None:
    attempt = verify_callback_token(SERVER_KEY, EXECUTION, token)
    assert attempt is None or token == callback_token(SERVER_KEY, EXECUTION, attempt)


@given(st.integers(0, 10**9 - 1), any_text)
def test_a_minted_callback_token_verifies_and_nothing_appended_to_it_does(attempt: int, tail: str) -> None:
    token = callback_token(SERVER_KEY, EXECUTION, attempt)
    assert verify_callback_token(SERVER_KEY, EXECUTION, token) == attempt
    if tail:
        assert verify_callback_token(SERVER_KEY, EXECUTION, token + tail) is None


@given(any_text)
def test_any_traceparent_is_kept_or_ignored(value: str) -> None:
    kept = valid_traceparent(value)
    assert kept is None or kept == value.strip(" \t")



@given(st.text("0123456789abcdef", min_size=32, max_size=32), st.text("0123456789abcdef", min_size=16, max_size=16),
       st.text("0123456789abcdef", min_size=2, max_size=2))
def test_a_version_00_traceparent_with_nonzero_ids_is_kept(trace: str, parent: str, flags: str) -> None:
    value = f"00-{trace}-{parent}-{flags}"
    expected = None if set(trace) == {"0"} or set(parent) == {"0"} else value
    assert valid_traceparent(value) == expected


@given(any_text)
@example("Bearer \ud800")  # a lone surrogate: UnicodeEncodeError
@example("Bearer " + "k" * 32)
def test_any_authorization_header_is_a_key_or_unauthenticated(header: str) -> None:
    """What authenticate() does with a header before any database key is looked up."""
    token = bearer_from(header)
    assert token is None or (token and token == token.strip())
    if token is None or not is_bootstrap_key((b"k" * 32,), token):
        return  # no bootstrap key: unauthenticated unless a database key matches
    assert token == "k" * 32
