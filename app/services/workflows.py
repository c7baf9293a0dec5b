"""Workflows (POST /v1/workflows and the routes under it): a set of jobs with dependencies made
atomically, jobs added to one, seen, cancelled and retried. The transitions themselves keep a
workflow going (app/db/sql/functions/jobwire_workflow_transitions.sql)."""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from uuid import UUID

import orjson

from app.db.database import Connection, Database
from app.db.executions import ExecutionRepository, job_document
from app.db.workflows import WorkflowRepository
from app.domain.access import may_use, require_queue
from app.domain.errors import Conflict, FieldError, NotFound, PayloadTooLarge, StaleAttempt, ValidationFailed
from app.domain.workflows import (
    MAX_JOBS,
    SETTLED,
    NewWorkflow,
    SpawnParent,
    Workflow,
    WorkflowFilter,
    WorkflowItem,
    WorkflowJob,
    WorkflowJobRow,
    graph_faults,
    spawned_ref,
)
from app.services import cursors
from app.services.enqueue import EnqueueLimits, job_size
from app.services.executions import decode_position, encode_position
from app.services.retrying import retry_contention
from app.services.wakeups import wake_for_freed_slots


@dataclass(frozen=True, slots=True)
class Made:
    workflow: Workflow
    items: list[WorkflowItem]
    created: bool  # False: its idempotency key returned the workflow stored before


@dataclass(frozen=True, slots=True)
class WorkflowPage:
    items: list[Workflow]
    next_cursor: str | None


@dataclass(frozen=True, slots=True)
class WorkflowJobPage:
    items: list[WorkflowJobRow]
    next_cursor: str | None


@dataclass(frozen=True, slots=True)
class Retried:
    workflow: Workflow
    waiting_again: int  # jobs a failed dependency had cancelled
    retried: int  # dead-lettered jobs run again


@dataclass(frozen=True, slots=True)
class Spawned:
    workflow_id: UUID
    items: list[WorkflowItem]  # the request's children in its order, by the refs it gave
    created: bool  # False: every ref had been spawned before (a replay): those children, unchanged


def request_hash(spec: NewWorkflow) -> str:
    """The fingerprint an idempotency key is stored with: the request as the jobs are stored."""
    document = {"name": spec.name, "metadata": spec.metadata,
                "jobs": [{"ref": j.ref, "depends_on": list(j.depends_on), "policy": j.on_dependency_failure.value,
                          "job": job_document(j.job)} for j in spec.jobs]}
    return hashlib.sha256(orjson.dumps(document, option=orjson.OPT_SORT_KEYS)).hexdigest()


class WorkflowService:
    def __init__(self, db: Database, limits: EnqueueLimits, workflows: WorkflowRepository | None = None,
                 executions: ExecutionRepository | None = None) -> None:
        self.db = db
        self.limits = limits
        self.workflows = workflows or WorkflowRepository()
        self.executions = executions or ExecutionRepository()

    def _check_jobs(self, jobs: Sequence[WorkflowJob], queues: frozenset[str] | None,
                    known: frozenset[str] = frozenset(), at: Sequence[int] | None = None) -> None:
        faults = graph_faults(jobs, known, at)
        if faults:
            raise ValidationFailed(faults)
        for i, j in zip(at if at is not None else range(len(jobs)), jobs, strict=True):
            require_queue(queues, j.job.queue, f"jobs[{i}].queue")
            size = job_size(j.job)
            if size > self.limits.max_payload_bytes:
                raise PayloadTooLarge(field=f"jobs[{i}]", size=size, limit=self.limits.max_payload_bytes)

    async def create(self, spec: NewWorkflow, queues: frozenset[str] | None = None) -> Made:
        """Every job of the workflow or none; a repeated idempotency key with the same request
        answers the workflow stored before (created False), with another → 422."""
        self._check_jobs(spec.jobs, queues)
        fingerprint = request_hash(spec) if spec.idempotency_key else None
        return await retry_contention(lambda: self._create_once(spec, fingerprint))

    async def _create_once(self, spec: NewWorkflow, fingerprint: str | None) -> Made:
        async with self.db.transaction() as conn:
            workflow = await self.workflows.insert(conn, spec.name, spec.metadata, spec.idempotency_key, fingerprint)
            if workflow is None:
                assert spec.idempotency_key is not None
                return await self._stored(conn, spec, fingerprint)
            items, workflow = await self._add(conn, workflow.id, spec.jobs)
            return Made(workflow, items, created=True)

    async def _stored(self, conn: Connection, spec: NewWorkflow, fingerprint: str | None) -> Made:
        found = await self.workflows.by_key(conn, spec.idempotency_key)  # type: ignore[arg-type]
        if found is None:  # deleted between the two statements: the caller tries again
            raise ValidationFailed([FieldError("idempotency_key", "the workflow of this key vanished; try again")])
        workflow, stored_hash = found
        if stored_hash != fingerprint:
            raise ValidationFailed([FieldError("idempotency_key", f"idempotency key {spec.idempotency_key!r} was "
                                                                  "used with a different request body")])
        rows = await self.workflows.jobs_page(conn, workflow.id, None, "", MAX_JOBS)
        by_ref = {r.ref: r for r in rows}
        items = [WorkflowItem(j.ref, by_ref[j.ref].execution_id, by_ref[j.ref].state)
                 for j in spec.jobs if j.ref in by_ref]
        return Made(workflow, items, created=False)

    async def _add(self, conn: Connection, workflow_id: UUID, jobs: Sequence[WorkflowJob],
                   known: Mapping[str, tuple[UUID, str]] | None = None,
                   spawned_by: UUID | None = None) -> tuple[list[WorkflowItem], Workflow]:
        """Inserts `jobs` into the workflow through jobwire_enqueue (its checks and defaults; no event rows),
        each with parents WAITING for those unfinished, with their edges (and their parent, when a
        handler spawned them); counts them in and settles those whose parents already in the
        workflow (`known`: (id, state) by ref, read under a lock no parent's end passes: the
        parents share-locked, or the workflow's row locked first) are settled."""
        known = dict(known or {})
        missing = sorted({p for j in jobs for p in j.depends_on} - {j.ref for j in jobs} - set(known))
        if missing:  # parents in the workflow a caller did not lock yet
            known.update(await self.workflows.share_parents(conn, workflow_id, missing))
        pending: list[int | None] = [
            sum(1 for p in j.depends_on if p not in known or known[p][1] not in SETTLED) if j.depends_on else None
            for j in jobs]
        inserted = await self.workflows.enqueue(conn, workflow_id, jobs, pending, spawned_by)
        reused = [FieldError(f"jobs[{i}].idempotency_key", "names an execution stored before: a workflow's jobs are "
                                                           "new ones")
                  for i, (_, _, created) in enumerate(inserted) if not created]
        if reused:
            raise ValidationFailed(reused)
        ids = [i for i, _, _ in inserted]
        by_ref = {j.ref: i for j, i in zip(jobs, ids, strict=True)}
        parents: list[UUID] = []
        children: list[UUID] = []
        for j, child in zip(jobs, ids, strict=True):
            for p in j.depends_on:
                parents.append(by_ref[p] if p in by_ref else known[p][0])
                children.append(child)
        await self.workflows.add_edges(conn, parents, children)
        added = Counter(state for _, state, _ in inserted)
        workflow = await self.workflows.account(conn, workflow_id, added, MAX_JOBS)
        if workflow is None:
            current = await self.workflows.get(conn, workflow_id)
            if current is not None and current.jobs + len(jobs) > MAX_JOBS:
                raise ValidationFailed([FieldError("jobs", f"a workflow holds at most {MAX_JOBS} jobs; it has "
                                                           f"{current.jobs}")])
            raise Conflict(f"workflow {workflow_id} is finished ({current.state if current else 'gone'}): "
                           "jobs are added to a RUNNING workflow only")
        # Only a job with a parent settled before this call can be settled now (the new ones are not).
        settling = [i for j, i in zip(jobs, ids, strict=True)
                    if any(p in known and known[p][1] in SETTLED for p in j.depends_on)]
        due = await self.workflows.settle(conn, workflow_id, settling) if settling else 0
        if due or added.get("ENQUEUED"):
            await self.executions.notify(conn, self.db.notify_channel)
        if not settling:
            items = [WorkflowItem(j.ref, i, state) for j, (i, state, _) in zip(jobs, inserted, strict=True)]
            return items, workflow
        items = await self.workflows.items(conn, ids)
        workflow = await self.workflows.get(conn, workflow_id) or workflow
        return items, workflow

    async def add_jobs(self, workflow_id: UUID, jobs: Sequence[WorkflowJob],
                       queues: frozenset[str] | None = None) -> tuple[Workflow, list[WorkflowItem]]:
        """Jobs added to a RUNNING workflow; they may depend on any of its refs, finished ones too."""
        async def once() -> tuple[Workflow, list[WorkflowItem]]:
            async with self.db.transaction() as conn:
                # The workflow's row first: a job of it that ends takes the row (in the trigger)
                # before it commits, so while it is held no parent ends, and the parents' states
                # read next are the ones to count on, with no lock on any of them (1,000 parents,
                # 1,000 row locks written before: bench/README.md, 2026-12-08).
                workflow = await self.workflows.lock(conn, workflow_id)
                if workflow is None or not await self._visible(conn, workflow_id, queues):
                    raise NotFound("workflow", workflow_id)
                if workflow.state != "RUNNING":
                    raise Conflict(f"workflow {workflow_id} is {workflow.state}: jobs are added to a RUNNING "
                                   "workflow only")
                # The refs the request names, parents and new ones, in one lookup: a parent found is
                # known, a new ref found is taken, a parent not found is unknown (the graph check
                # names the last two).
                found = await self.workflows.by_refs(
                    conn, workflow_id, sorted({p for j in jobs for p in j.depends_on} | {j.ref for j in jobs}))
                self._check_jobs(jobs, queues, frozenset(found))
                parents = {p: found[p] for j in jobs for p in j.depends_on if p in found}
                items, workflow = await self._add(conn, workflow_id, jobs, parents)
                return workflow, items
        return await retry_contention(once)

    async def spawn(self, parent_id: UUID, attempt: int, jobs: Sequence[WorkflowJob]) -> Spawned:
        """Children of a running attempt (POST {callback.url}/children, its token's `attempt`): they
        join the parent's workflow (one is made for a parent outside workflows), each under the
        ref `<parent's ref>/<ref>`, and run at once unless they depend on one another (their
        `depends_on` names refs this parent spawned). Idempotent per (parent, ref): a ref spawned
        before answers that child (the first spawn of a ref wins), so a replayed handler gets
        the same executions back. New children need the attempt PROCESSING (409 otherwise)."""
        return await retry_contention(lambda: self._spawn_once(parent_id, attempt, jobs))

    async def _spawn_once(self, parent_id: UUID, attempt: int, jobs: Sequence[WorkflowJob]) -> Spawned:
        async with self.db.transaction() as conn:
            # The children the new ones depend on, the parent, then (in _add) its workflow's row: the
            # order a child's end takes them (its row, its parent's, its workflow's).
            seen = await self.workflows.spawn_parent(conn, parent_id, lock=False)
            siblings: dict[str, tuple[UUID, str]] = {}
            if seen is not None and seen.workflow_id is not None and seen.workflow_ref is not None:
                refs = sorted({spawned_ref(seen.workflow_ref, p) for j in jobs for p in j.depends_on})
                siblings = await self.workflows.share_parents(conn, seen.workflow_id, refs)
            parent = await self.workflows.spawn_parent(conn, parent_id)
            if parent is None:
                raise NotFound("execution", parent_id)
            if parent.attempt != attempt:
                raise StaleAttempt(attempt, parent.attempt)
            before = await self._spawned_before(conn, parent, jobs)
            fresh = [(i, j) for i, j in enumerate(jobs) if j.ref not in before]
            if fresh and parent.state != "PROCESSING":
                raise Conflict(f"execution {parent_id} is {parent.state}: children are spawned by a running "
                               "attempt")
            workflow_id, parent_ref = parent.workflow_id, parent.workflow_ref
            if not fresh:
                assert workflow_id is not None  # children were spawned: the parent is in a workflow
                return Spawned(workflow_id, [before[j.ref] for j in jobs], created=False)
            self._check_jobs([j for _, j in fresh], None, frozenset(before), [i for i, _ in fresh])
            if workflow_id is None or parent_ref is None:
                workflow_id, parent_ref = await self.workflows.adopt(conn, parent), parent.handler
            full = [WorkflowJob(ref=spawned_ref(parent_ref, j.ref), job=j.job,
                                depends_on=tuple(spawned_ref(parent_ref, p) for p in j.depends_on),
                                on_dependency_failure=j.on_dependency_failure) for _, j in fresh]
            # A first spawn that raced this one (the parent's workflow made since it was seen) left
            # `siblings` empty: _add locks them after the parent (a deadlock PostgreSQL breaks, if any).
            made, _ = await self._add(conn, workflow_id, full, siblings, spawned_by=parent.id)
            for (_, job), item in zip(fresh, made, strict=True):
                before[job.ref] = WorkflowItem(job.ref, item.execution_id, item.state)
            return Spawned(workflow_id, [before[j.ref] for j in jobs], created=True)

    async def _spawned_before(self, conn: Connection, parent: SpawnParent,
                              jobs: Sequence[WorkflowJob]) -> dict[str, WorkflowItem]:
        """The children `parent` spawned before among the refs `jobs` name (theirs and their
        parents'), by the ref the handler gave."""
        if parent.workflow_id is None or parent.workflow_ref is None:
            return {}
        prefix = spawned_ref(parent.workflow_ref, "")
        refs = sorted({spawned_ref(parent.workflow_ref, r) for j in jobs for r in (j.ref, *j.depends_on)})
        return {i.ref[len(prefix):]: WorkflowItem(i.ref[len(prefix):], i.execution_id, i.state)
                for i in await self.workflows.spawned(conn, parent.id, refs)}

    async def _visible(self, conn: Connection, workflow_id: UUID, queues: frozenset[str] | None) -> bool:
        if queues is None:
            return True
        return all(may_use(queues, q) for q in await self.workflows.queues(conn, workflow_id))

    async def get(self, workflow_id: UUID, queues: frozenset[str] | None = None) -> Workflow:
        async with self.db.transaction() as conn:
            workflow = await self.workflows.get(conn, workflow_id)
            if workflow is None or not await self._visible(conn, workflow_id, queues):
                raise NotFound("workflow", workflow_id)
            return workflow

    async def list(self, where: WorkflowFilter, limit: int, cursor: str | None,
                   queues: frozenset[str] | None = None) -> WorkflowPage:
        after = None
        if cursor:
            created, id_ = decode_position(cursor, times=1)
            after = (created, id_)
        async with self.db.transaction() as conn:
            rows = await self.workflows.page(conn, where, after, limit + 1, queues)
        items, more = rows[:limit], len(rows) > limit
        return WorkflowPage(items, encode_position(items[-1].created_at, items[-1].id) if more and items else None)

    async def jobs(self, workflow_id: UUID, state: str | None, limit: int, cursor: str | None,
                   queues: frozenset[str] | None = None) -> WorkflowJobPage:
        after = ""
        if cursor:
            try:
                after = cursors.decode(cursor)["ref"]
                if not isinstance(after, str):
                    raise TypeError(after)
            except (ValueError, TypeError, KeyError):
                raise ValidationFailed([FieldError("cursor", "not a cursor this listing made")]) from None
        async with self.db.transaction() as conn:
            if await self.workflows.get(conn, workflow_id) is None or not await self._visible(conn, workflow_id,
                                                                                                queues):
                raise NotFound("workflow", workflow_id)
            rows = await self.workflows.jobs_page(conn, workflow_id, state, after, limit + 1)
        items, more = rows[:limit], len(rows) > limit
        return WorkflowJobPage(items, cursors.encode({"ref": items[-1].ref}) if more and items else None)

    async def cancel(self, workflow_id: UUID, queues: frozenset[str] | None = None) -> Workflow:
        """Every unfinished job CANCELLED (a PROCESSING one as a cancel of it: its slot is free at once,
        its handler learns it from its next callback). 409 for a finished workflow."""
        async def once() -> Workflow:
            async with self.db.transaction() as conn:
                workflow = await self.workflows.get(conn, workflow_id)
                if workflow is None or not await self._visible(conn, workflow_id, queues):
                    raise NotFound("workflow", workflow_id)
                if workflow.state != "RUNNING":
                    raise Conflict(f"workflow {workflow_id} is {workflow.state}: only a RUNNING workflow is cancelled")
                cancelled = await self.workflows.cancel_jobs(conn, workflow_id)
                await wake_for_freed_slots(self.db, self.executions, conn, cancelled)
                return await self.workflows.get(conn, workflow_id) or workflow
        return await retry_contention(once)

    async def retry(self, workflow_id: UUID, queues: frozenset[str] | None = None) -> Retried:
        """Its dead-lettered jobs run again and those a failed dependency cancelled wait again, so the
        graph goes on from where it stopped; a succeeded job never runs again. 409 when there is
        nothing to retry."""
        async def once() -> Retried:
            async with self.db.transaction() as conn:
                workflow = await self.workflows.get(conn, workflow_id)
                if workflow is None or not await self._visible(conn, workflow_id, queues):
                    raise NotFound("workflow", workflow_id)
                waiting_again, retried, _ = await self.workflows.retry(conn, workflow_id)
                after = await self.workflows.get(conn, workflow_id)
                if (waiting_again == 0 and retried == 0) or (after is not None and after.state != "RUNNING"):
                    # Nothing can run again (what a failed dependency cancelled waits for a job a user
                    # cancelled): the transaction is rolled back, nothing changed, no second end.
                    raise Conflict(f"workflow {workflow_id} has no dead-lettered job, and no job cancelled by a "
                                   "failed dependency that could run again: nothing to retry")
                await self.executions.notify(conn, self.db.notify_channel)
                return Retried(after or workflow, waiting_again, retried)
        return await retry_contention(once)
