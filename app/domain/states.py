"""The execution state machine, defined once.

Every guarded write in app/db names its allowed source states from here; a test checks
that the SQL guards and this table agree.
"""

from __future__ import annotations

from enum import StrEnum


class JobState(StrEnum):
    # Waiting, possibly future-dated (scheduled_at). The dispatcher's claim moves it to
    # PROCESSING; a user's cancel moves it to CANCELLED.
    ENQUEUED = "ENQUEUED"
    # Claimed: its HTTP call is in flight (locked_by = node) or the handler accepted it
    # with 202 (locked_by cleared). The dispatcher, a completion callback, a cancel, the
    # coordinator's deadline and dead-node scans move it on. A node that claimed it but never
    # dispatched it (the reply to its claim was lost) puts it back to ENQUEUED, same attempt.
    PROCESSING = "PROCESSING"
    # Done. Terminal.
    SUCCEEDED = "SUCCEEDED"
    # An attempt failed. A retry re-enqueues in the same transaction, so a committed row
    # rests here only when written by a path that leaves retry to another writer.
    FAILED = "FAILED"
    # Cancelled by a user. Only a manual retry moves it on.
    CANCELLED = "CANCELLED"
    # Interrupted (deadline passed, node died). Re-enqueued or dead-lettered in the same
    # transaction for delayed jobs; a late success for its attempt still wins.
    ABANDONED = "ABANDONED"
    # Attempts spent or not retryable; parked. A manual retry re-enqueues it; a late
    # success wins when it was reached by abandoning (error_type abandoned_*).
    DEAD_LETTER = "DEAD_LETTER"
    # A job of a workflow whose parents are not all terminal yet: never claimed, never due, holding
    # no slot. The transition that ends its last parent enqueues it; a parent's failure cancels it
    # (on_dependency_failure `cancel`), as does a user's cancel.
    WAITING = "WAITING"


S = JobState

TRANSITIONS: dict[JobState, frozenset[JobState]] = {
    S.ENQUEUED: frozenset({S.PROCESSING, S.CANCELLED}),
    # WAITING: a handler's suspend (the same attempt; DESIGN §9).
    S.PROCESSING: frozenset({S.SUCCEEDED, S.FAILED, S.CANCELLED, S.ABANDONED, S.DEAD_LETTER, S.ENQUEUED,
                             S.WAITING}),
    S.SUCCEEDED: frozenset(),
    S.FAILED: frozenset({S.ENQUEUED, S.DEAD_LETTER}),
    S.CANCELLED: frozenset({S.ENQUEUED, S.WAITING}),  # WAITING: a workflow's retry of a job a dependency cancelled
    S.ABANDONED: frozenset({S.ENQUEUED, S.DEAD_LETTER, S.SUCCEEDED, S.FAILED}),
    S.DEAD_LETTER: frozenset({S.ENQUEUED, S.SUCCEEDED}),
    S.WAITING: frozenset({S.ENQUEUED, S.CANCELLED}),
}

TERMINAL: frozenset[JobState] = frozenset(s for s, nxt in TRANSITIONS.items() if not nxt)


def sources_of(target: JobState) -> frozenset[JobState]:
    """States from which `target` may be reached."""
    return frozenset(s for s, nxt in TRANSITIONS.items() if target in nxt)


# The source sets that each guarded write uses (see app/db/sql/executions.sql).
CLAIM_FROM = (S.ENQUEUED,)
CANCEL_FROM = (S.ENQUEUED, S.PROCESSING, S.WAITING)
MANUAL_RETRY_FROM = (S.DEAD_LETTER, S.CANCELLED)
FAIL_FROM = (S.PROCESSING,)
ABANDON_FROM = (S.PROCESSING,)
# Claimed, never dispatched: back to ENQUEUED with the same attempt.
UNDISPATCHED_FROM = (S.PROCESSING,)
# A call an adaptive handler refused (429): back to ENQUEUED with the same attempt.
REFUSED_FROM = (S.PROCESSING,)
# A success for the current attempt also wins over ABANDONED and over a DEAD_LETTER
# reached by abandoning (error_type abandoned_*): its work did finish.
SUCCEED_FROM = (S.PROCESSING, S.ABANDONED, S.DEAD_LETTER)
# An execution may be deleted (DELETE /v1/executions/{id}, bulk-delete) in any state but the live ones.
PURGE_FROM = tuple(s for s in S if s not in (S.ENQUEUED, S.PROCESSING, S.WAITING))
# A workflow's retry: its dead-lettered jobs run again, those a failed dependency cancelled wait again.
WORKFLOW_RETRY_FROM = (S.DEAD_LETTER,)
WORKFLOW_REWAIT_FROM = (S.CANCELLED,)
# A handler's suspend of its attempt: WAITING until a time, a signal or a timeout.
SUSPEND_FROM = (S.PROCESSING,)
ABANDONED_ERROR_PREFIX = "abandoned_"
