"""The dashboard's outcome ledger (app/domain/dashboard.py): a minute that ended is read once, a
refresh reads from the minute before the last one seen, and the window slides."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from app.domain.dashboard import OutcomeCount, OutcomeLedger

T0 = datetime(2026, 12, 3, 12, 0, tzinfo=UTC)


def minute(i: int) -> datetime:
    return T0 + timedelta(minutes=i)


def counts(*rows: tuple[int, str | None, str, int]) -> list[OutcomeCount]:
    return [OutcomeCount(minute(i), handler, kind, n) for i, handler, kind, n in rows]


def test_a_first_read_takes_the_window_and_a_refresh_only_the_last_two_minutes():
    ledger = OutcomeLedger(15)
    assert ledger.since() is None and ledger.per_minute() == []
    ledger.record(minute(20), None, counts((5, "mail", "execution.succeeded", 5),  # before the window
                                           (10, "mail", "execution.succeeded", 3),
                                           (19, "mail", "execution.failed", 1),
                                           (20, "pdf", "execution.succeeded", 2)))
    chart = ledger.per_minute()
    assert [m.minute for m in chart] == [minute(i) for i in range(6, 21)]
    assert {m.minute: m.counts for m in chart if m.counts} == {
        minute(10): {"execution.succeeded": 3}, minute(19): {"execution.failed": 1},
        minute(20): {"execution.succeeded": 2}}
    assert ledger.since() == minute(19)
    # The next read, a minute on, brings minutes 19, 20 and 21: they replace what was kept of them.
    ledger.record(minute(21), minute(19), counts((19, "mail", "execution.failed", 2),
                                                 (20, "pdf", "execution.succeeded", 4),
                                                 (21, "pdf", "execution.failed", 1)))
    by_minute = {m.minute: m.counts for m in ledger.per_minute() if m.counts}
    assert by_minute == {minute(10): {"execution.succeeded": 3}, minute(19): {"execution.failed": 2},
                         minute(20): {"execution.succeeded": 4}, minute(21): {"execution.failed": 1}}
    assert sorted(ledger.by_handler()) == [("mail", "execution.failed", 2), ("mail", "execution.succeeded", 3),
                                           ("pdf", "execution.failed", 1), ("pdf", "execution.succeeded", 4)]


def test_the_window_slides_and_a_long_pause_reads_the_whole_window_again():
    ledger = OutcomeLedger(15)
    ledger.record(minute(20), None, counts((10, "mail", "execution.succeeded", 3)))
    ledger.record(minute(24), minute(19), [])  # the window: minutes 10 … 24
    assert minute(10) in {m.minute for m in ledger.per_minute() if m.counts}
    ledger.record(minute(25), minute(23), [])  # minute 10 leaves it (11 … 25)
    assert all(not m.counts for m in ledger.per_minute()) and ledger.by_handler() == []
    # An hour later: the read starts at the window's first minute, whatever `since` was.
    ledger.record(minute(90), minute(25), counts((80, None, "execution.succeeded", 7)))
    assert [m.minute for m in ledger.per_minute()][0] == minute(76)
    assert sum(m.total for m in ledger.per_minute()) == 7 and ledger.by_handler() == []  # no handler named
