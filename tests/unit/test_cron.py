"""Cron parsing and fire instants (DESIGN §6.3): Vixie semantics, seconds-first 6 fields, Quartz
syntax refused, and the DST rule across the 2026 transitions in Europe/Berlin and America/New_York:
a wall time that does not exist fires at the first instant after the gap (fires landing on one
instant are one), a wall time that occurs twice fires on its first occurrence only."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from app.domain import cron


def utc(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


def fires(expression: str, zone: str, after: str, count: int) -> list[str]:
    expr, tz = cron.parse(expression), cron.zone(zone)
    return [t.strftime("%Y-%m-%dT%H:%M:%S") for t in cron.preview(expr, tz, utc(after), count)]


# Berlin: 2026-03-29 02:00 CET → 03:00 CEST at 01:00 UTC; 2026-10-25 03:00 CEST → 02:00 CET at 01:00 UTC.
# New York: 2026-03-08 02:00 EST → 03:00 EDT at 07:00 UTC; 2026-11-01 02:00 EDT → 01:00 EST at 06:00 UTC.
DST_TABLE = [
    # fixed time inside the spring gap: the first instant after the gap (03:00 local), then normal
    ("0 30 2 * * *", "Europe/Berlin", "2026-03-27T12:00:00", 3,
     ["2026-03-28T01:30:00", "2026-03-29T01:00:00", "2026-03-30T00:30:00"]),
    ("30 2 * * *", "Europe/Berlin", "2026-03-27T12:00:00", 3,
     ["2026-03-28T01:30:00", "2026-03-29T01:00:00", "2026-03-30T00:30:00"]),
    # fixed time inside the repeated hour: the first occurrence only (CEST), once
    ("0 30 2 * * *", "Europe/Berlin", "2026-10-23T12:00:00", 3,
     ["2026-10-24T00:30:00", "2026-10-25T00:30:00", "2026-10-26T01:30:00"]),
    # wildcard minutes through the gap: every wall minute 02:00-02:59 lands on 03:00 → one fire
    ("0 * * * * *", "Europe/Berlin", "2026-03-29T00:58:00", 4,
     ["2026-03-29T00:59:00", "2026-03-29T01:00:00", "2026-03-29T01:01:00", "2026-03-29T01:02:00"]),
    # wildcard through the repeated hour: 02:00-02:59 fire in CEST, not again in CET
    ("0 */20 * * * *", "Europe/Berlin", "2026-10-24T23:50:00", 5,
     ["2026-10-25T00:00:00", "2026-10-25T00:20:00", "2026-10-25T00:40:00", "2026-10-25T02:00:00",
      "2026-10-25T02:20:00"]),
    ("*/30 * * * *", "Europe/Berlin", "2026-10-24T23:50:00", 4,
     ["2026-10-25T00:00:00", "2026-10-25T00:30:00", "2026-10-25T02:00:00", "2026-10-25T02:30:00"]),
    # hourly across the gap
    ("0 0 * * * *", "America/New_York", "2026-03-08T05:30:00", 3,
     ["2026-03-08T06:00:00", "2026-03-08T07:00:00", "2026-03-08T08:00:00"]),
    ("0 30 2 * * *", "America/New_York", "2026-03-07T00:00:00", 3,
     ["2026-03-07T07:30:00", "2026-03-08T07:00:00", "2026-03-09T06:30:00"]),
    # 01:30 occurs twice on 2026-11-01 in New York: EDT only
    ("30 1 * * *", "America/New_York", "2026-10-31T00:00:00", 3,
     ["2026-10-31T05:30:00", "2026-11-01T05:30:00", "2026-11-02T06:30:00"]),
    # hourly across the repeated hour: 01:00 EDT, then 02:00 EST (01:00 EST is the second occurrence)
    ("0 0 * * * *", "America/New_York", "2026-11-01T04:30:00", 3,
     ["2026-11-01T05:00:00", "2026-11-01T07:00:00", "2026-11-01T08:00:00"]),
    # every second across the gap: 01:59:59 CET, then 03:00:00 CEST (02:xx:xx collapse onto it)
    ("* * * * * *", "Europe/Berlin", "2026-03-29T00:59:58", 3,
     ["2026-03-29T00:59:59", "2026-03-29T01:00:00", "2026-03-29T01:00:01"]),
]


@pytest.mark.parametrize(("expression", "zone", "after", "count", "expected"), DST_TABLE)
def test_fire_instants_follow_the_dst_rule(expression, zone, after, count, expected):
    assert fires(expression, zone, after, count) == expected


def test_a_wildcard_skips_the_second_occurrence_of_the_repeated_hour():
    # Every minute in Berlin on 2026-10-25: 60 fires between 00:00 and 01:00 UTC (02:xx CEST), then
    # nothing until 02:00 UTC (03:00 CET); the CET 02:xx hour does not fire again.
    got = fires("0 * * * * *", "Europe/Berlin", "2026-10-24T23:59:59", 62)
    assert got[59] == "2026-10-25T00:59:00" and got[60] == "2026-10-25T02:00:00"


def test_next_after_an_instant_in_the_second_occurrence_moves_past_it():
    expr, tz = cron.parse("0 * * * * *"), cron.zone("Europe/Berlin")
    assert cron.next_after(expr, tz, utc("2026-10-25T01:30:00")) == utc("2026-10-25T02:00:00")


@pytest.mark.parametrize(("expression", "after", "expected"), [
    ("0 0 8 * * *", "2026-01-01T00:00:00", ["2026-01-01T08:00:00", "2026-01-02T08:00:00"]),
    ("0 8 * * *", "2026-01-01T00:00:00", ["2026-01-01T08:00:00", "2026-01-02T08:00:00"]),
    ("*/15 * * * * *", "2026-01-01T00:00:00", ["2026-01-01T00:00:15", "2026-01-01T00:00:30"]),
    ("0 0 9 * * MON-FRI", "2026-01-02T10:00:00", ["2026-01-05T09:00:00", "2026-01-06T09:00:00"]),
    ("0 12 * JAN,jul sun", "2026-01-01T00:00:00", ["2026-01-04T12:00:00", "2026-01-11T12:00:00"]),
    ("0 0 * * 7", "2026-01-01T00:00:00", ["2026-01-04T00:00:00", "2026-01-11T00:00:00"]),  # 7 = Sunday
    ("0 0 * * 0", "2026-01-01T00:00:00", ["2026-01-04T00:00:00", "2026-01-11T00:00:00"]),  # 0 = Sunday
    # both day fields restricted: OR-ed (the 13th, and every Friday)
    ("0 0 13 * 5", "2026-01-01T00:00:00", ["2026-01-02T00:00:00", "2026-01-09T00:00:00", "2026-01-13T00:00:00"]),
    # day of week starts with '*': AND (Vixie), so only the 13th
    ("0 0 13 * *", "2026-01-01T00:00:00", ["2026-01-13T00:00:00", "2026-02-13T00:00:00"]),
    ("0 0 0 29 2 *", "2026-01-01T00:00:00", ["2028-02-29T00:00:00", "2032-02-29T00:00:00"]),
    ("0 10-20/5 3 * * *", "2026-01-01T00:00:00", ["2026-01-01T03:10:00", "2026-01-01T03:15:00",
                                                   "2026-01-01T03:20:00"]),
    ("0 50/5 * * * *", "2026-01-01T00:00:00", ["2026-01-01T00:50:00", "2026-01-01T00:55:00",
                                               "2026-01-01T01:50:00"]),
])
def test_vixie_semantics(expression, after, expected):
    assert fires(expression, "UTC", after, len(expected)) == expected


@pytest.mark.parametrize(("expression", "reason"), [
    ("0 0 ? * *", "Quartz syntax '?'"),
    ("0 0 L * *", "Quartz syntax 'L'"),
    ("0 0 15W * *", "Quartz syntax '15W'"),
    ("0 0 * * 5L", "Quartz syntax '5L'"),
    ("0 0 * * 5#3", "Quartz syntax '#'"),
    ("0 0 12 * * ? 2026", "7 fields"),
    ("* * * *", "expected 5 or 6 fields"),
    ("0 0 30 2 *", "never fires"),
    ("0 0 * * 8", "8 is outside 0-7"),
    ("60 * * * * *", "60 is outside 0-59"),
    ("0 0 * FOO *", "'FOO' is not a number or a name"),
    ("5-1 * * * *", "runs backwards"),
    ("*/0 * * * *", "step '0'"),
    ("1,,2 * * * *", "empty list item"),
    ("@daily", "macros"),
    ("", "empty expression"),
])
def test_bad_expressions_are_refused_with_a_reason(expression, reason):
    with pytest.raises(cron.CronError, match=None) as caught:
        cron.parse(expression)
    assert reason in str(caught.value)


@pytest.mark.parametrize("name", ["Mars/Olympus", "", "../../etc/passwd", "/etc/localtime", "Europe/"])
def test_unknown_time_zones_are_refused(name):
    with pytest.raises(cron.CronError, match="unknown time zone"):
        cron.zone(name)


# --- the planner a scheduler tick runs -------------------------------------------------------

EVERY_SECOND = cron.parse("* * * * * *")
EVERY_MINUTE = cron.parse("0 * * * * *")


def test_plan_fires_every_on_time_instant_and_moves_the_cursor_to_now():
    now = utc("2026-05-01T12:00:03.500000")
    p = cron.plan(EVERY_SECOND, cron.zone("UTC"), after=utc("2026-05-01T12:00:00"), now=now,
                  misfire_threshold=60, fire_once_on_misfire=True)
    assert p.fires == [utc("2026-05-01T12:00:01"), utc("2026-05-01T12:00:02"), utc("2026-05-01T12:00:03")]
    assert (p.handled_until, p.next_fire_at, p.missed) == (now, utc("2026-05-01T12:00:04"), 0)


def test_plan_after_an_outage_fires_once_for_the_latest_missed_instant_with_fire_once():
    # Down for a day: minutes older than the threshold are misfires; one catch-up, not 1440, then
    # the on-time instant (30 s late is within the threshold).
    p = cron.plan(EVERY_MINUTE, cron.zone("UTC"), after=utc("2026-05-01T00:00:00"),
                  now=utc("2026-05-02T00:00:30"), misfire_threshold=60, fire_once_on_misfire=True)
    assert p.fires == [utc("2026-05-01T23:59:00"), utc("2026-05-02T00:00:00")]
    p = cron.plan(EVERY_MINUTE, cron.zone("UTC"), after=utc("2026-05-01T00:00:00"),
                  now=utc("2026-05-02T00:05:30"), misfire_threshold=60, fire_once_on_misfire=True)
    assert p.fires == [utc("2026-05-02T00:04:00"), utc("2026-05-02T00:05:00")]
    assert p.missed == 1


def test_plan_after_an_outage_fires_nothing_missed_with_skip():
    p = cron.plan(EVERY_MINUTE, cron.zone("UTC"), after=utc("2026-05-01T00:00:00"),
                  now=utc("2026-05-02T00:05:30"), misfire_threshold=60, fire_once_on_misfire=False)
    assert p.fires == [utc("2026-05-02T00:05:00")]
    assert p.next_fire_at == utc("2026-05-02T00:06:00")


def test_plan_caps_the_fires_of_one_tick_and_resumes_from_the_last():
    p = cron.plan(EVERY_SECOND, cron.zone("UTC"), after=utc("2026-05-01T00:00:00"),
                  now=utc("2026-05-01T00:00:50"), misfire_threshold=3600, fire_once_on_misfire=True, limit=10)
    assert len(p.fires) == 10 and p.handled_until == utc("2026-05-01T00:00:10")
    assert p.next_fire_at == utc("2026-05-01T00:00:11")


def test_a_years_long_outage_costs_few_steps():
    expr = cron.parse("0 0 3 1 1 *")  # yearly
    latest = cron.latest_at_or_before(expr, cron.zone("UTC"), utc("2001-01-01T00:00:00"), utc("2026-06-01T00:00:00"))
    assert latest == utc("2026-01-01T03:00:00")
    assert cron.latest_at_or_before(expr, cron.zone("UTC"), utc("2026-02-01T00:00:00"),
                                    utc("2026-06-01T00:00:00")) is None


def test_next_after_is_strictly_after_and_ignores_sub_seconds():
    tz = cron.zone("UTC")
    assert cron.next_after(EVERY_MINUTE, tz, utc("2026-05-01T00:01:00")) == utc("2026-05-01T00:02:00")
    assert cron.next_after(EVERY_MINUTE, tz, utc("2026-05-01T00:00:59.999")) == utc("2026-05-01T00:01:00")
    assert cron.next_after(EVERY_SECOND, tz, utc("2026-05-01T00:00:00") - timedelta(microseconds=1)) \
        == utc("2026-05-01T00:00:00")
