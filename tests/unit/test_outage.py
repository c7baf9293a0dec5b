"""The outage rule, in database time passed in: no sleeps."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from app.domain.outage import OutageRule

T0 = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def test_a_node_judges_no_one_before_its_first_heartbeat() -> None:
    rule = OutageRule(heartbeat_timeout=60)
    assert not rule.may_judge_others(at(1000))
    assert not rule.may_abandon_past_deadlines(at(1000))


def test_after_starting_a_node_judges_others_only_once_connected_for_one_heartbeat_timeout() -> None:
    rule = OutageRule(heartbeat_timeout=60)
    rule.heartbeat_written(at(0), failed_since_last=False)
    assert not rule.may_judge_others(at(59.9))
    assert rule.may_judge_others(at(60))
    # Deadlines are not held back by a start: no handler lost its way to the database.
    assert rule.may_abandon_past_deadlines(at(0))


def test_later_heartbeats_do_not_restart_the_count() -> None:
    rule = OutageRule(heartbeat_timeout=60)
    for t in range(0, 70, 10):
        rule.heartbeat_written(at(t), failed_since_last=False)
    assert rule.may_judge_others(at(60))


def test_a_failed_heartbeat_stops_all_judging_until_connected_for_a_timeout_again() -> None:
    rule = OutageRule(heartbeat_timeout=60)
    rule.heartbeat_written(at(0), failed_since_last=False)
    assert rule.may_judge_others(at(100))
    rule.failed()
    assert not rule.may_judge_others(at(200)) and not rule.may_abandon_past_deadlines(at(200))
    rule.heartbeat_written(at(300), failed_since_last=False)  # the first heartbeat back
    assert not rule.may_judge_others(at(359)) and not rule.may_abandon_past_deadlines(at(359))
    assert rule.may_judge_others(at(360)) and rule.may_abandon_past_deadlines(at(360))


def test_a_failure_seen_elsewhere_between_heartbeats_counts_from_the_next_heartbeat() -> None:
    """A claim or a callback that found the database away between two heartbeats that both
    committed: the outage fell between them, and the count starts again at the second."""
    rule = OutageRule(heartbeat_timeout=60)
    rule.heartbeat_written(at(0), failed_since_last=False)
    rule.heartbeat_written(at(100), failed_since_last=True)
    assert not rule.may_judge_others(at(159))
    assert rule.may_judge_others(at(160))


def test_an_outage_longer_than_the_timeout_judges_no_one_on_return() -> None:
    """The scenario the rule exists for: every row is stale when the database comes back."""
    rule = OutageRule(heartbeat_timeout=2)
    rule.heartbeat_written(at(0), failed_since_last=False)
    rule.heartbeat_written(at(1), failed_since_last=False)
    rule.failed()  # 4 s without the database
    rule.heartbeat_written(at(5), failed_since_last=False)
    assert not rule.may_judge_others(at(5.1))  # the other node's row is 4 s old, but so was ours
    assert rule.may_judge_others(at(7))
