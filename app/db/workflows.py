"""WorkflowRepository: the statements of app/db/sql/workflows.sql."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any
from uuid import UUID

from app.db.database import Connection
from app.db.queries import fragment, load
from app.db.rows import execution_from
from app.db.executions import job_document
from app.db.statements import execute, fetch, fetchrow, fetchval, json_param
from app.domain import states
from app.domain.executions import Execution
from app.domain.workflows import (
    SpawnParent,
    Workflow,
    WorkflowFilter,
    WorkflowItem,
    WorkflowJob,
    WorkflowJobRow,
    WorkflowState,
)

Q = load("workflows.sql", cancel_selected=fragment("executions.sql", "cancel_selected"))


def workflow_from(m: Mapping[str, Any]) -> Workflow:
    return Workflow(
        id=m["id"],
        name=m["name"],
        metadata=m["metadata"],
        state=WorkflowState(m["state"]),
        counts={state: n for state, n in m["counts"].items() if n},
        jobs=m["jobs"],
        created_at=m["created_at"],
        updated_at=m["updated_at"],
        completed_at=m["completed_at"],
    )


class WorkflowRepository:
    async def insert(self, conn: Connection, name: str | None, metadata: Any, idempotency_key: str | None,
                     request_hash: str | None) -> Workflow | None:
        """The new workflow; None when its idempotency key is stored already."""
        row = await fetchrow(conn, Q["workflow_insert"], name=name, metadata=json_param(metadata),
                             idempotency_key=idempotency_key, request_hash=request_hash)
        return None if row is None else workflow_from(row)

    async def by_key(self, conn: Connection, idempotency_key: str) -> tuple[Workflow, str | None] | None:
        row = await fetchrow(conn, Q["workflow_by_key"], idempotency_key=idempotency_key)
        return None if row is None else (workflow_from(row), row["request_hash"])

    async def get(self, conn: Connection, workflow_id: UUID) -> Workflow | None:
        row = await fetchrow(conn, Q["workflow_get"], id=workflow_id)
        return None if row is None else workflow_from(row)

    async def share_parents(self, conn: Connection, workflow_id: UUID,
                            refs: Sequence[str]) -> dict[str, tuple[UUID, str]]:
        """The jobs `refs` of the workflow, share-locked until commit: (id, state) by ref."""
        rows = await fetch(conn, Q["workflow_parents_share"], workflow=workflow_id, refs=list(refs))
        return {r["ref"]: (r["id"], r["state"]) for r in rows}

    async def lock(self, conn: Connection, workflow_id: UUID) -> Workflow | None:
        row = await fetchrow(conn, Q["workflow_lock"], id=workflow_id)
        return None if row is None else workflow_from(row)

    async def enqueue(self, conn: Connection, workflow_id: UUID, jobs: Sequence[WorkflowJob],
                      pending: Sequence[int | None], spawned_by: UUID | None = None) -> list[tuple[UUID, str, bool]]:
        """Inserts `jobs` into the workflow through jobwire_enqueue, each with parents (`pending`
        not None) WAITING for that many (and their parent, when a handler spawned them); per job
        (id, state, created)."""
        rows = await fetch(conn, Q["workflow_enqueue"], jobs=json_param([job_document(j.job) for j in jobs]),
                           workflow=workflow_id, refs=[j.ref for j in jobs],
                           policies=[j.on_dependency_failure.value for j in jobs], pending=list(pending),
                           spawned_by=spawned_by)
        return [(r["id"], r["state"], bool(r["created"])) for r in rows]

    async def add_edges(self, conn: Connection, parents: Sequence[UUID], children: Sequence[UUID]) -> None:
        if parents:
            await execute(conn, Q["workflow_edges"], parents=list(parents), children=list(children))

    async def account(self, conn: Connection, workflow_id: UUID, added: Mapping[str, int],
                      max_jobs: int) -> Workflow | None:
        """Counts the new jobs in; None when the workflow is finished or would pass `max_jobs`."""
        row = await fetchrow(conn, Q["workflow_account"], id=workflow_id, states=list(added),
                             ns=list(added.values()), added=sum(added.values()), max_jobs=max_jobs)
        return None if row is None else workflow_from(row)

    async def settle(self, conn: Connection, workflow_id: UUID, ids: Sequence[UUID] | None = None) -> int:
        """Enqueues (or cancels) the WAITING jobs whose parents are settled; how many are due now."""
        return int(await fetchval(conn, Q["workflow_settle"], workflow=workflow_id,
                                  ids=None if ids is None else list(ids)))

    async def items(self, conn: Connection, ids: Sequence[UUID]) -> list[WorkflowItem]:
        rows = await fetch(conn, Q["workflow_items"], ids=list(ids))
        return [WorkflowItem(ref=r["ref"], execution_id=r["execution_id"], state=r["state"]) for r in rows]

    async def by_refs(self, conn: Connection, workflow_id: UUID, refs: Sequence[str]) -> dict[str, tuple[UUID, str]]:
        """The jobs of the workflow among `refs`, unlocked: (id, state) by ref."""
        rows = await fetch(conn, Q["workflow_refs"], workflow=workflow_id, refs=list(refs))
        return {r["ref"]: (r["id"], r["state"]) for r in rows}

    async def jobs_page(self, conn: Connection, workflow_id: UUID, state: str | None, after: str,
                        limit: int) -> list[WorkflowJobRow]:
        rows = await fetch(conn, Q["workflow_jobs_page"], workflow=workflow_id, state=state, after=after, limit=limit)
        return [WorkflowJobRow(ref=r["ref"], execution_id=r["execution_id"], state=r["state"], queue=r["queue"],
                               depends_on=tuple(r["depends_on"])) for r in rows]

    async def queues(self, conn: Connection, workflow_id: UUID) -> frozenset[str]:
        return frozenset(r["queue"] for r in await fetch(conn, Q["workflow_queues"], workflow=workflow_id))

    async def page(self, conn: Connection, where: WorkflowFilter, after: tuple[datetime, UUID] | None, limit: int,
                   queues: frozenset[str] | None) -> list[Workflow]:
        rows = await fetch(conn, Q["workflows_page"], state=where.state.value if where.state else None,
                           name=where.name, after_created=after[0] if after else None,
                           after_id=after[1] if after else None, limit=limit,
                           queues=None if queues is None else sorted(queues))
        return [workflow_from(r) for r in rows]

    async def cancel_jobs(self, conn: Connection, workflow_id: UUID) -> list[Execution]:
        rows = await fetch(conn, Q["workflow_cancel_jobs"], workflow=workflow_id,
                           from_states=list(states.CANCEL_FROM))
        return [execution_from(r) for r in rows]

    async def retry(self, conn: Connection, workflow_id: UUID) -> tuple[int, int, int]:
        """Its jobs a failed dependency cancelled wait again, its dead-lettered ones run again, and
        those whose parents are settled go on: (waiting again, retried, due now)."""
        rewaited = await fetchval(conn, Q["workflow_rewait"], workflow=workflow_id,
                                  from_states=list(states.WORKFLOW_REWAIT_FROM))
        retried = await fetchval(conn, Q["workflow_retry_dead"], workflow=workflow_id,
                                 from_states=list(states.WORKFLOW_RETRY_FROM))
        due = await self.settle(conn, workflow_id)
        return int(rewaited), int(retried), due

    async def parents_page(self, conn: Connection, execution_id: UUID, after: str,
                           limit: int) -> list[Mapping[str, Any]]:
        return list(await fetch(conn, Q["workflow_parents_page"], id=execution_id, after=after, limit=limit))

    async def unfinished_parents(self, conn: Connection, execution_id: UUID) -> list[str]:
        return [r["ref"] for r in await fetch(conn, Q["execution_unfinished_parents"], id=execution_id)]

    async def spawn_parent(self, conn: Connection, execution_id: UUID, lock: bool = True) -> SpawnParent | None:
        """The execution that spawns children (locked until commit, unless `lock` is False); None
        when it does not exist."""
        row = await fetchrow(conn, Q["spawn_parent" if lock else "spawn_parent_seen"], id=execution_id)
        return None if row is None else SpawnParent(**row)

    async def adopt(self, conn: Connection, parent: SpawnParent) -> UUID:
        """A workflow made for `parent` (outside workflows until now), holding it by its handler's
        name; the workflow's id."""
        return await fetchval(conn, Q["spawn_adopt"], id=parent.id, name=parent.handler, ref=parent.handler,
                              state=parent.state)

    async def spawned(self, conn: Connection, parent_id: UUID, refs: Sequence[str]) -> list[WorkflowItem]:
        rows = await fetch(conn, Q["spawned"], id=parent_id, refs=list(refs))
        return [WorkflowItem(ref=r["ref"], execution_id=r["execution_id"], state=r["state"]) for r in rows]

    async def spawned_page(self, conn: Connection, parent_id: UUID, after: str,
                           limit: int) -> list[Mapping[str, Any]]:
        return list(await fetch(conn, Q["spawned_page"], id=parent_id, after=after, limit=limit))
