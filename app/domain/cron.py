"""Cron expressions and their fire instants in a time zone (DESIGN §6.3). Pure: no I/O, no clock.

Vixie semantics, with an optional leading seconds field: `sec min hour dom month dow` (6 fields)
or `min hour dom month dow` (5 fields, seconds = 0). Numbers, `*`, ranges `a-b`, steps `*/n`,
`a-b/n` and `a/n` (a to the field's end), lists, month names (JAN–DEC) and day names (SUN–SAT).
Weekday 0–7, where 0 and 7 are Sunday. When both day-of-month and day-of-week are restricted
(neither starts with `*`, as Vixie cron decides), a day matches if either does. Quartz's `?`,
`L`, `W`, `#` and a 7th (year) field are refused.

DST, for every expression: matching wall times are mapped to instants; a wall time that does not
exist (a spring-forward gap) maps to the first instant after the gap, and fires that land on one
instant are one fire; a wall time that occurs twice (fall back) fires on its first occurrence only.
"""

from __future__ import annotations

import calendar
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

_MONTHS = {name.upper(): i for i, name in enumerate(calendar.month_abbr) if name}
_DAYS = {"SUN": 0, "MON": 1, "TUE": 2, "WED": 3, "THU": 4, "FRI": 5, "SAT": 6}
_SECOND = timedelta(seconds=1)
# The longest wait between two fires of a valid expression: Feb 29 on a weekday-free expression
# across a non-leap century year (2096 → 2104).
_HORIZON_DAYS = 8 * 366 + 1


class CronError(ValueError):
    """An expression or time zone that cannot be used; the message says why."""


@dataclass(frozen=True, slots=True)
class _Field:
    name: str
    low: int
    high: int
    names: dict[str, int] | None = None


_SECONDS = _Field("seconds", 0, 59)
_MINUTES = _Field("minutes", 0, 59)
_HOURS = _Field("hours", 0, 23)
_DOM = _Field("day of month", 1, 31)
_MONTH = _Field("month", 1, 12, _MONTHS)
_DOW = _Field("day of week", 0, 7, _DAYS)


def _is_number(token: str) -> bool:
    # ASCII 0-9 only: str.isdigit() also takes '١' (Arabic-Indic one), which int() reads as 1,
    # and '²', which int() refuses.
    return token.isascii() and token.isdigit()


def _significant(digits: str) -> str:
    # int() refuses more than 4300 digits; the caller judges a long number by its length.
    return digits.lstrip("0") or "0"


def _value(token: str, f: _Field) -> int:
    upper = token.upper()
    if f.names and upper in f.names:
        return f.names[upper]
    if not _is_number(token):
        if any(c in upper for c in "LW") and _is_number(upper.rstrip("LW")) or upper in ("L", "W", "LW"):
            raise CronError(f"{f.name}: Quartz syntax {token!r} (L, W) is not supported")
        raise CronError(f"{f.name}: {token!r} is not a number" + (" or a name" if f.names else ""))
    digits = _significant(token)
    if len(digits) > 2 or not f.low <= int(digits) <= f.high:  # every field's numbers have 1-2 digits
        raise CronError(f"{f.name}: {digits} is outside {f.low}-{f.high}")
    return int(digits)


def _parse_field(text: str, f: _Field) -> frozenset[int]:
    for quartz in ("?", "#"):
        if quartz in text:
            raise CronError(f"{f.name}: Quartz syntax {quartz!r} is not supported")
    values: set[int] = set()
    for part in text.split(","):
        if not part:
            raise CronError(f"{f.name}: empty list item in {text!r}")
        base, slash, step_text = part.partition("/")
        step = 1
        if slash:
            if not _is_number(step_text) or _significant(step_text) == "0":
                raise CronError(f"{f.name}: step {step_text!r} must be a positive number")
            digits = _significant(step_text)
            # A step past the field's span takes the first value only, however long its number.
            step = int(digits) if len(digits) <= 3 else f.high + 1
        if base == "*":
            low, high = f.low, f.high
        elif "-" in base:
            first, _, last = base.partition("-")
            low, high = _value(first, f), _value(last, f)
            if low > high:
                raise CronError(f"{f.name}: range {base!r} runs backwards")
        else:
            low = _value(base, f)
            high = f.high if slash else low
        values.update(range(low, high + 1, step))
    if f is _DOW and 7 in values:
        values = (values - {7}) | {0}
    return frozenset(values)


@dataclass(frozen=True, slots=True)
class CronExpression:
    text: str
    seconds: frozenset[int]
    minutes: frozenset[int]
    hours: frozenset[int]
    days: frozenset[int]
    months: frozenset[int]
    weekdays: frozenset[int]  # 0 = Sunday
    days_or: bool  # both day fields restricted: a day matches if either does (Vixie)
    day_restricted: bool
    weekday_restricted: bool

    def _day_matches(self, d: date) -> bool:
        dom = d.day in self.days
        dow = (d.isoweekday() % 7) in self.weekdays
        if self.days_or:
            return dom or dow
        return dom and dow

    def next_wall_time(self, start: datetime) -> datetime | None:
        """The first naive wall time at or after `start` that matches (None if none within years)."""
        t = start.replace(microsecond=0) + (_SECOND if start.microsecond else timedelta())
        limit = t + timedelta(days=_HORIZON_DAYS)
        while t <= limit:
            if t.month not in self.months:
                year, month = (t.year + 1, 1) if t.month == 12 else (t.year, t.month + 1)
                t = datetime(year, month, 1)
                continue
            if not self._day_matches(t.date()):
                t = datetime(t.year, t.month, t.day) + timedelta(days=1)
                continue
            if t.hour not in self.hours:
                t = t.replace(minute=0, second=0) + timedelta(hours=1)
                continue
            if t.minute not in self.minutes:
                t = t.replace(second=0) + timedelta(minutes=1)
                continue
            if t.second not in self.seconds:
                t += _SECOND
                continue
            return t
        return None


def parse(text: str) -> CronExpression:
    """Parse a 5- or 6-field expression; CronError says what is wrong."""
    if not isinstance(text, str) or not text.strip():
        raise CronError("empty expression")
    if not text.isascii():
        odd = next(c for c in text if not c.isascii())
        raise CronError(f"{odd!r} is not allowed: an expression is ASCII (digits 0-9, names such as MON, * , - /)")
    fields = text.split()
    if fields[0].startswith("@"):
        raise CronError(f"macros such as {fields[0]!r} are not supported; write the fields")
    if len(fields) == 5:
        fields = ["0", *fields]
    elif len(fields) == 7:
        raise CronError("7 fields (a Quartz year field) are not supported; use 5 or 6 fields")
    elif len(fields) != 6:
        raise CronError(f"expected 5 or 6 fields (seconds first), got {len(fields)}")
    sec, minute, hour, dom, month, dow = fields
    expr = CronExpression(
        text=" ".join(text.split()),
        seconds=_parse_field(sec, _SECONDS),
        minutes=_parse_field(minute, _MINUTES),
        hours=_parse_field(hour, _HOURS),
        days=_parse_field(dom, _DOM),
        months=_parse_field(month, _MONTH),
        weekdays=_parse_field(dow, _DOW),
        days_or=not dom.startswith("*") and not dow.startswith("*"),
        day_restricted=not dom.startswith("*"),
        weekday_restricted=not dow.startswith("*"),
    )
    if expr.next_wall_time(datetime(2000, 1, 1)) is None:
        raise CronError("the expression never fires (no such day in the months it names)")
    return expr


def zone(name: str) -> ZoneInfo:
    """An IANA time zone; CronError if unknown."""
    if not isinstance(name, str) or not name or name.startswith(("/", ".")) or ".." in name:
        raise CronError(f"unknown time zone {name!r}")
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, OSError):
        raise CronError(f"unknown time zone {name!r} (expected an IANA name such as Europe/Berlin)") from None


def _to_instant(wall: datetime, tz: ZoneInfo) -> datetime:
    """A wall time → its instant: the first occurrence when it occurs twice, and the first
    instant after the gap when it does not exist."""
    first = wall.replace(tzinfo=tz, fold=0).astimezone(UTC)
    if first.astimezone(tz).replace(tzinfo=None) == wall:
        return first
    # In a gap: fold=0 and fold=1 bracket the transition; find its first second by bisection
    # (the first instant whose wall time is past `wall`).
    low = wall.replace(tzinfo=tz, fold=1).astimezone(UTC)
    high = first
    if low > high:
        low, high = high, low
    while high - low > _SECOND:
        mid = low + timedelta(seconds=((high - low) // 2).total_seconds() // 1)
        if mid.astimezone(tz).replace(tzinfo=None) > wall:
            high = mid
        else:
            low = mid
    return high


def next_after(expr: CronExpression, tz: ZoneInfo, after: datetime) -> datetime | None:
    """The first fire instant strictly after `after` (aware), in UTC; None if none within years."""
    # Instants grow with wall times (never shrink), so nothing before after's own wall time fires
    # after it. Wall times of a repeated hour seen a second time map to instants before `after`.
    wall = after.astimezone(tz).replace(tzinfo=None, fold=0)
    candidate = wall.replace(microsecond=0) + _SECOND
    while True:
        found = expr.next_wall_time(candidate)
        if found is None:
            return None
        instant = _to_instant(found, tz)
        if instant > after:
            return instant
        candidate = found + _SECOND


def fires_between(expr: CronExpression, tz: ZoneInfo, after: datetime, until: datetime,
                  limit: int) -> list[datetime]:
    """Fire instants in (after, until], ascending, at most `limit` of them (the earliest)."""
    out: list[datetime] = []
    t = after
    while len(out) < limit:
        nxt = next_after(expr, tz, t)
        if nxt is None or nxt > until:
            break
        out.append(nxt)
        t = nxt
    return out


def latest_at_or_before(expr: CronExpression, tz: ZoneInfo, after: datetime, until: datetime) -> datetime | None:
    """The last fire instant in (after, until], or None. Probes backwards from `until` in doubling
    windows, so a long outage costs a few dozen steps, not one per missed instant."""
    window = _SECOND
    while True:
        start = max(after, until - window)
        first = next_after(expr, tz, start)
        if first is not None and first <= until:
            latest = first
            while (nxt := next_after(expr, tz, latest)) is not None and nxt <= until:
                latest = nxt
            return latest
        if start == after:
            return None
        window *= 2


def preview(expr: CronExpression, tz: ZoneInfo, after: datetime, count: int) -> list[datetime]:
    out: list[datetime] = []
    t = after
    while len(out) < count and (t := next_after(expr, tz, t)) is not None:  # type: ignore[assignment]
        out.append(t)
    return out


@dataclass(frozen=True, slots=True)
class FirePlan:
    fires: list[datetime]  # instants to fire now, ascending
    handled_until: datetime  # the cursor: every instant up to here is fired or given up
    next_fire_at: datetime | None  # the first instant after `now`
    missed: int  # 0 or 1: whether instants were missed (misfires), whatever the policy


def plan(expr: CronExpression, tz: ZoneInfo, *, after: datetime, now: datetime, misfire_threshold: float,
         fire_once_on_misfire: bool, limit: int = 100) -> FirePlan:
    """What a scheduler tick fires: the instants in (after, now]. Those older than
    now - misfire_threshold are misfires: at most one (the latest) is fired, and only with
    FIRE_ONCE; the on-time ones are fired, at most `limit` per tick (the rest next tick)."""
    cutoff = now - timedelta(seconds=misfire_threshold)
    fires: list[datetime] = []
    missed = 0
    if cutoff > after:
        latest_missed = latest_at_or_before(expr, tz, after, cutoff)
        if latest_missed is not None:
            missed = 1
            if fire_once_on_misfire:
                fires.append(latest_missed)
        after = max(after, cutoff)
    on_time = fires_between(expr, tz, after, now, limit)
    fires.extend(on_time)
    if len(on_time) == limit:  # more are due: the next tick goes on from the last one fired
        return FirePlan(fires, on_time[-1], next_after(expr, tz, on_time[-1]), missed)
    return FirePlan(fires, now, next_after(expr, tz, now), missed)
