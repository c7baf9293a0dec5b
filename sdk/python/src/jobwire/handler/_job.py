"""Job: the dispatch request's body, parsed once, as the handler reads it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from jobwire.models import WorkflowRef


class NotADispatch(ValueError):
    """A verified body that is not a Jobwire dispatch (the text of the 400)."""


@dataclass(frozen=True, slots=True)
class Parent:
    """A parent of a job in a workflow, as the dispatch carries it: its `ref`, its execution, that
    execution's `state` (terminal, since a job runs only once every parent is: SUCCEEDED, or with
    `on_dependency_failure="run"` also DEAD_LETTER or CANCELLED) and its `result`. The dispatch
    inlines the parents' results while they total at most 256 KiB as JSON; beyond that it leaves
    every one out (`has_result` False, `result` None), and `await ctx.parents()` fetches them."""

    ref: str
    execution_id: str
    state: str
    result: Any = None
    has_result: bool = True


# A child this execution spawned (`ctx.spawn`), as a resumption for its children carries it
# (`job.resume.children`) and `await ctx.children()` pages through them: the same shape as a
# parent (its `ref` as the parent gave it, its execution, `state`, `result`, `has_result`).
Child = Parent


@dataclass(frozen=True, slots=True)
class ReceivedSignal:
    """A signal a resumption consumed: its `name`, its `payload` (any JSON value) and when it was
    sent (`sent_at`)."""

    name: str
    payload: Any
    sent_at: datetime | None


@dataclass(frozen=True, slots=True)
class Resume:
    """Why a suspended execution was dispatched again (`job.resume`): the resumption's number `n`
    (1 for the first; also the `jobwire-resume` header), its `reason` (`timer`: the `until` or
    `seconds` came; `signal`: a signal the wait named arrived, or was already there; `timeout`:
    `timeout_seconds` passed first; `children`: every child it spawned is terminal) and the
    `signals` it consumed, oldest first (every waiting signal of a name the wait named; empty
    unless the reason is `signal`). For a wait on its children (`ctx.suspend(children=True)`),
    `children` holds every child it spawned by the ref it gave (whatever the reason), with their
    results while they total at most 256 KiB (else `has_result` False: `await ctx.children()`);
    empty for other waits."""

    n: int
    reason: str
    signals: tuple[ReceivedSignal, ...] = ()
    children: Mapping[str, Child] = field(default_factory=dict)

    def signal(self, name: str) -> ReceivedSignal | None:
        """The first signal of `name` this resumption consumed, or None."""
        return next((s for s in self.signals if s.name == name), None)


@dataclass(frozen=True, slots=True)
class Job:
    """One attempt of one execution. `execution_id` is the same on every attempt (make work
    idempotent on it); `attempt` counts from 0. `deadline` is when Jobwire gives up on the
    attempt unless it hears from it (each progress or heartbeat moves it). `raw` is the whole
    body, for fields newer than this toolkit.

    For a job of a workflow, `workflow` is the workflow's `id` and this job's `ref` in it, and
    `parents` its direct parents by ref (empty for a root); None and empty outside workflows.

    For a job that suspended (`ctx.suspend`), `steps` holds every step recorded so far, by name
    (what `ctx.run_step_once` answers from without asking Jobwire), and `resume` says why this
    dispatch came: None on a first dispatch and on a retry, a `Resume` when the execution was
    dispatched again after a wait. `steps` is empty for a job that never suspended (its steps,
    if any, are asked of Jobwire)."""

    execution_id: str
    attempt: int
    payload: Any
    parameters: dict[str, Any] | None
    metadata: dict[str, Any] | None
    job_id: str
    job_type: str | None
    queue: str | None
    max_attempts: int | None
    scheduled_at: datetime | None
    started_at: datetime | None
    deadline: datetime | None
    callback_url: str
    callback_token: str = field(repr=False)
    raw: Mapping[str, Any] = field(repr=False, compare=False)
    workflow: WorkflowRef | None = None
    parents: Mapping[str, Parent] = field(default_factory=dict)
    resume: Resume | None = None
    steps: Mapping[str, Any] = field(default_factory=dict)

    @property
    def is_last_attempt(self) -> bool:
        """True when a failure of this attempt dead-letters the execution (no attempt follows)."""
        return self.max_attempts is not None and self.attempt + 1 >= self.max_attempts


def parse_job(document: Any) -> Job:
    if not isinstance(document, dict):
        raise NotADispatch("the body is not a JSON object")
    callback = document.get("callback")
    execution_id = document.get("execution_id")
    attempt = document.get("attempt")
    if not isinstance(execution_id, str) or not execution_id:
        raise NotADispatch("no execution_id")
    if not isinstance(attempt, int) or isinstance(attempt, bool) or attempt < 0:
        raise NotADispatch("no attempt")
    if not (isinstance(callback, dict) and isinstance(callback.get("url"), str)
            and isinstance(callback.get("token"), str)):
        raise NotADispatch("no callback url and token")
    max_attempts = document.get("max_attempts")
    workflow, parents = _workflow(document.get("workflow"))
    return Job(
        execution_id=execution_id,
        attempt=attempt,
        payload=document.get("payload"),
        parameters=document.get("parameters"),
        metadata=document.get("metadata"),
        job_id=str(document.get("job_id") or execution_id),
        job_type=document.get("job_type"),
        queue=document.get("queue"),
        max_attempts=max_attempts if isinstance(max_attempts, int) else None,
        scheduled_at=_time(document.get("scheduled_at")),
        started_at=_time(document.get("started_at")),
        deadline=_time(document.get("deadline")),
        callback_url=callback["url"].rstrip("/"),
        callback_token=callback["token"],
        raw=document,
        workflow=workflow,
        parents=parents,
        resume=_resume(document.get("resume")),
        steps=_steps(document.get("steps")),
    )


def _workflow(value: Any) -> tuple[WorkflowRef | None, dict[str, Parent]]:
    """The dispatch's `workflow` {id, ref, parents: {ref: {execution_id, state, result?}}}: where
    the job stands and its parents; (None, {}) outside workflows."""
    if not isinstance(value, dict):
        return None, {}
    workflow_id, ref = value.get("id"), value.get("ref")
    if not isinstance(workflow_id, str) or not isinstance(ref, str):
        raise NotADispatch("a workflow without its id and ref")
    parents: dict[str, Parent] = {}
    for parent_ref, parent in (value.get("parents") or {}).items():
        if not isinstance(parent, dict):
            raise NotADispatch(f"workflow parent {parent_ref!r} is not an object")
        parents[parent_ref] = parent_of(parent_ref, parent)
    return WorkflowRef(id=workflow_id, ref=ref, raw={"id": workflow_id, "ref": ref}), parents


def _resume(value: Any) -> Resume | None:
    """The dispatch's `resume` {n, reason, signals: [{name, payload, sent_at}], children}, on a
    resumed dispatch only; None otherwise."""
    if value is None:
        return None
    if not isinstance(value, dict):
        raise NotADispatch("resume is not an object")
    n, reason, signals = value.get("n"), value.get("reason"), value.get("signals") or []
    if not isinstance(n, int) or isinstance(n, bool) or not isinstance(reason, str):
        raise NotADispatch("a resume without its n and reason")
    if not isinstance(signals, list) or not all(isinstance(s, dict) and isinstance(s.get("name"), str)
                                                for s in signals):
        raise NotADispatch("resume.signals is not a list of signals")
    children = value.get("children") or {}
    if not isinstance(children, dict) or not all(isinstance(c, dict) for c in children.values()):
        raise NotADispatch("resume.children is not an object of children")
    return Resume(n=n, reason=reason,
                  signals=tuple(ReceivedSignal(name=s["name"], payload=s.get("payload"),
                                               sent_at=_time(s.get("sent_at"))) for s in signals),
                  children={ref: parent_of(ref, child) for ref, child in children.items()})


def _steps(value: Any) -> dict[str, Any]:
    """The dispatch's `steps` {name: result} (a job that suspended); {} otherwise."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise NotADispatch("steps is not an object")
    return dict(value)


def parent_of(ref: str, document: Mapping[str, Any]) -> Parent:
    """A parent (or a child) from the dispatch's `{execution_id, state, result?}`, or a `/parents`
    (`/children`) item."""
    return Parent(ref=ref, execution_id=str(document.get("execution_id")), state=str(document.get("state")),
                  result=document.get("result"), has_result="result" in document)


def _time(value: Any) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        return datetime.fromisoformat(value)  # Jobwire writes RFC 3339 in UTC with a Z
    except ValueError:
        return None
