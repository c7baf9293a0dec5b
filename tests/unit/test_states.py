"""The state machine is defined once; the source sets of the guarded writes agree with it."""

from __future__ import annotations

import re

import pytest

from app.db.queries import parse
from app.domain import states
from app.domain.states import TERMINAL, TRANSITIONS, JobState, sources_of

S = JobState

# DESIGN §2, "allowed next", transcribed.
DESIGN_TABLE = {
    S.ENQUEUED: {S.PROCESSING, S.CANCELLED},
    S.PROCESSING: {S.SUCCEEDED, S.FAILED, S.CANCELLED, S.ABANDONED, S.DEAD_LETTER, S.ENQUEUED, S.WAITING},
    S.SUCCEEDED: set(),
    S.FAILED: {S.ENQUEUED, S.DEAD_LETTER},
    S.CANCELLED: {S.ENQUEUED, S.WAITING},  # WAITING: a workflow's retry of a job a failed dependency cancelled
    S.ABANDONED: {S.ENQUEUED, S.DEAD_LETTER, S.SUCCEEDED, S.FAILED},
    S.DEAD_LETTER: {S.ENQUEUED, S.SUCCEEDED},
    S.WAITING: {S.ENQUEUED, S.CANCELLED},  # DESIGN §9
}

# Each guarded write's source set and the state it writes.
TARGET_OF = {
    "CLAIM_FROM": S.PROCESSING,
    "CANCEL_FROM": S.CANCELLED,
    "MANUAL_RETRY_FROM": S.ENQUEUED,
    "FAIL_FROM": S.FAILED,
    "ABANDON_FROM": S.ABANDONED,
    "SUCCEED_FROM": S.SUCCEEDED,
    "UNDISPATCHED_FROM": S.ENQUEUED,
    "REFUSED_FROM": S.ENQUEUED,
    "WORKFLOW_RETRY_FROM": S.ENQUEUED,
    "WORKFLOW_REWAIT_FROM": S.WAITING,
    "SUSPEND_FROM": S.WAITING,
}
# Source sets of writes that delete the row instead of moving it to a state.
DELETE_FROM = {"PURGE_FROM"}


def test_every_state_has_an_entry_in_transitions() -> None:
    assert set(TRANSITIONS) == set(JobState)


def test_transitions_only_name_known_states_and_never_loop_to_themselves() -> None:
    for source, targets in TRANSITIONS.items():
        assert targets <= set(JobState)
        assert source not in targets


def test_transitions_match_the_design_table() -> None:
    assert {s: set(t) for s, t in TRANSITIONS.items()} == DESIGN_TABLE


def test_only_succeeded_is_terminal() -> None:
    assert TERMINAL == {S.SUCCEEDED}


def test_every_state_can_be_reached_from_another() -> None:
    for state in JobState:
        assert sources_of(state), f"{state} cannot be reached"


def test_sources_of_inverts_transitions() -> None:
    for target in JobState:
        assert sources_of(target) == {s for s, nxt in TRANSITIONS.items() if target in nxt}


def test_every_source_set_in_states_module_is_known_to_this_test() -> None:
    declared = {name for name in vars(states) if name.endswith("_FROM")}
    assert declared == set(TARGET_OF) | DELETE_FROM, "a new *_FROM set needs its target state in TARGET_OF"


@pytest.mark.parametrize("name", sorted(TARGET_OF))
def test_source_set_only_contains_states_that_may_reach_its_target(name: str) -> None:
    source_set = getattr(states, name)
    target = TARGET_OF[name]
    assert source_set, f"{name} is empty"
    assert len(set(source_set)) == len(source_set)
    assert set(source_set) <= sources_of(target), f"{name} allows {set(source_set) - sources_of(target)} → {target}"


def test_design_source_sets_for_user_actions() -> None:
    assert set(states.CANCEL_FROM) == {S.ENQUEUED, S.PROCESSING, S.WAITING}
    assert set(states.MANUAL_RETRY_FROM) == {S.DEAD_LETTER, S.CANCELLED}
    assert set(states.CLAIM_FROM) == {S.ENQUEUED}
    assert set(states.SUCCEED_FROM) == {S.PROCESSING, S.ABANDONED, S.DEAD_LETTER}


def test_a_purge_deletes_no_live_execution() -> None:
    assert set(states.PURGE_FROM) == set(JobState) - {S.ENQUEUED, S.PROCESSING, S.WAITING}


def _sql_statements() -> dict[str, str]:
    from importlib import resources

    return {name: sql for file in ("executions.sql", "workflows.sql")
            for name, sql in parse((resources.files("app.db") / "sql" / file).read_text(encoding="utf-8")).items()}


def _function_files() -> dict[str, str]:
    """Every SQL function's current text (app/db/sql/functions), every variant included."""
    from app.db.functions import current_directory

    return {p.name: p.read_text(encoding="utf-8") for p in sorted(current_directory().glob("*.sql"))}


def test_literal_guards_in_sql_agree_with_the_state_machine() -> None:
    """Statements that write a literal state guarded by literal source states (the claim) use
    only sources from which that state is allowed; the rest take :from_states from states.py."""
    checked: dict[str, int] = {}
    statements = {**_sql_statements(), **_function_files()}
    for name, sql in statements.items():
        body = re.sub(r"--[^\n]*", "", sql)
        for update in re.findall(r"UPDATE job_executions.*?(?:RETURNING|;|$)", body, flags=re.S):
            written = re.findall(r"SET state = '(\w+)'", update)
            if not written:
                continue
            guard = update.split("WHERE", 1)[1]
            literal_sources = re.findall(r"\bstate = '(\w+)'", guard)
            assert literal_sources or ":from_states" in guard, f"{name} writes state without a guard"
            for target in written:
                for source in literal_sources:
                    assert S(source) in sources_of(S(target)), f"{name}: {source} → {target} is not allowed"
                    checked[name] = checked.get(name, 0) + 1
    # The claim's one write, whichever of its forms (plain or full, every queue or some) chose the ids.
    assert checked.get("jobwire_claim.sql") == 1
