"""Workflows: jobs with dependencies (DESIGN §9). The graph's rules are checked here, before any
SQL runs; the database keeps the rest (WAITING, settling children, counts) in the transitions."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any
from uuid import UUID

from app.domain.errors import FieldError
from app.domain.executions import NewJob

MAX_JOBS_PER_CALL = 1000
MAX_JOBS = 10_000  # per workflow, over every call
INLINE_RESULTS_BYTES = 256 * 1024  # a dispatch inlines its parents' results up to this (jobwire_claim)


class WorkflowState(StrEnum):
    RUNNING = "RUNNING"  # a job is not terminal
    SUCCEEDED = "SUCCEEDED"  # every job succeeded
    FAILED = "FAILED"  # a job was dead-lettered or cancelled by a failed dependency
    CANCELLED = "CANCELLED"  # a user cancelled a job (or the workflow)


class DependencyPolicy(StrEnum):
    CANCEL = "cancel"  # a parent that ends DEAD_LETTER or CANCELLED cancels the job (and its descendants)
    RUN = "run"  # the job runs once every parent is terminal, whatever their outcome


@dataclass(frozen=True, slots=True)
class WorkflowJob:
    ref: str
    job: NewJob
    depends_on: tuple[str, ...] = ()
    on_dependency_failure: DependencyPolicy = DependencyPolicy.CANCEL


@dataclass(frozen=True, slots=True)
class NewWorkflow:
    jobs: tuple[WorkflowJob, ...]
    name: str | None = None
    metadata: dict[str, Any] | None = None
    idempotency_key: str | None = None


@dataclass(frozen=True, slots=True)
class Workflow:
    id: UUID
    name: str | None
    metadata: Any
    state: WorkflowState
    counts: Mapping[str, int]  # jobs by state, those with none left out
    jobs: int
    created_at: datetime
    updated_at: datetime
    completed_at: datetime | None


@dataclass(frozen=True, slots=True)
class WorkflowItem:
    ref: str
    execution_id: UUID
    state: str


@dataclass(frozen=True, slots=True)
class WorkflowJobRow:
    """A job as GET /v1/workflows/{id}/jobs lists it."""

    ref: str
    execution_id: UUID
    state: str
    queue: str
    depends_on: tuple[str, ...] = field(default=())


@dataclass(frozen=True, slots=True)
class SpawnParent:
    """An execution whose running handler spawns children (POST {callback.url}/children)."""

    id: UUID
    attempt: int
    state: str
    handler: str
    workflow_id: UUID | None
    workflow_ref: str | None


def spawned_ref(parent_ref: str, ref: str) -> str:
    """A spawned child's ref in the workflow: its parent's ref, `/`, the ref it was given. A ref
    given through the API has no `/`, so no child's ref is any other job's."""
    return f"{parent_ref}/{ref}"


@dataclass(frozen=True, slots=True)
class WorkflowFilter:
    state: WorkflowState | None = None
    name: str | None = None


def graph_faults(jobs: Sequence[WorkflowJob], known: frozenset[str] = frozenset(),
                 at: Sequence[int] | None = None) -> list[FieldError]:
    """What is wrong with the graph of `jobs` (added to a workflow that has the refs `known`):
    a duplicate ref (or one the workflow has), a dependency on an unknown ref or on itself, a cycle
    (its message lists its refs). None: the graph is sound. `at`: each job's index in the request
    (default: its index in `jobs`), for the fields the faults name."""
    index = list(at) if at is not None else list(range(len(jobs)))
    faults: list[FieldError] = []
    position: dict[str, int] = {}
    for i, job in enumerate(jobs):
        if job.ref in position or job.ref in known:
            faults.append(FieldError(f"jobs[{index[i]}].ref", f"ref {job.ref!r} is already in the workflow"))
        else:
            position[job.ref] = i
    for i, job in enumerate(jobs):
        seen: set[str] = set()
        for j, parent in enumerate(job.depends_on):
            if parent == job.ref:
                fault = f"{job.ref!r} cannot depend on itself"
            elif parent in seen:
                fault = f"{parent!r} is named twice"
            elif parent not in position and parent not in known:
                fault = f"no job with ref {parent!r} in the workflow"
            else:
                seen.add(parent)
                continue
            faults.append(FieldError(f"jobs[{index[i]}].depends_on[{j}]", fault))
            seen.add(parent)
    if faults:
        return faults
    cycle = _a_cycle(jobs, position)
    if cycle:
        i = position[cycle[0]]
        j = jobs[i].depends_on.index(cycle[1])
        return [FieldError(f"jobs[{index[i]}].depends_on[{j}]", "a cycle: " + " → ".join([*cycle, cycle[0]]))]
    return []


def _a_cycle(jobs: Sequence[WorkflowJob], position: Mapping[str, int]) -> list[str]:
    """A cycle among the new jobs as [a, b, …] where a depends on b, …, the last on a; [] if none.
    Iterative (a chain of 1,000 refs is no recursion limit)."""
    white, grey, black = 0, 1, 2
    color = dict.fromkeys(position, white)
    # Each job's parents among the new jobs, once (a job is visited once per parent: filtering its
    # depends_on at each visit made a fan-in of 1,000 a million lookups).
    inner = {ref: [p for p in jobs[i].depends_on if p in position] for ref, i in position.items()}
    for start in position:
        if color[start] != white:
            continue
        stack: list[tuple[str, int]] = [(start, 0)]
        path: list[str] = [start]
        color[start] = grey
        while stack:
            ref, k = stack[-1]
            parents = inner[ref]
            if k < len(parents):
                stack[-1] = (ref, k + 1)
                nxt = parents[k]
                if color[nxt] == grey:
                    return path[path.index(nxt):]
                if color[nxt] == white:
                    color[nxt] = grey
                    stack.append((nxt, 0))
                    path.append(nxt)
            else:
                color[ref] = black
                stack.pop()
                path.pop()
    return []


# The states that settle a parent for its children (the workflow's terminal states: a retry of one
# makes it unfinished again).
SETTLED: frozenset[str] = frozenset({"SUCCEEDED", "DEAD_LETTER", "CANCELLED"})
