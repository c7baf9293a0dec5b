"""Backpressure: the replies of a batch of dispatches move their handlers' (and keys') flow state,
shared by every node through PostgreSQL (app/domain/flow.py decides; this reads and writes it).

Only replies that can move it are looked at: failures, timeouts, 429s and 503s, and successes of
a handler the claim said is watched (adaptive, or with circuit failures counted). A plain
successful batch costs nothing here.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from uuid import UUID

from app.db.database import Database
from app.db.flow import FlowRepository, HandlerFlow, KeyFlow
from app.domain.dispatch import ClaimedJob, Outcome
from app.domain.flow import Reply, adaptive_after, circuit_after, moves_flow, reply_of


def _pause(replies: Sequence[Reply]) -> float | None:
    return max((r.retry_after for r in replies if r.retry_after is not None), default=None)


def _once_per_call(results: Sequence[tuple[ClaimedJob, Outcome]]
                   ) -> tuple[Sequence[tuple[ClaimedJob, Outcome]], dict[UUID, list[UUID]]]:
    """The results with a batch call's shared reply kept for its first job only, and, per such
    first job, the other jobs that share its reply."""
    if not any(o.shared for _, o in results):
        return results, {}
    kept: list[tuple[ClaimedJob, Outcome]] = []
    lead_of: dict[int, UUID] = {}
    riders: dict[UUID, list[UUID]] = {}
    for job, outcome in results:
        if outcome.shared:
            lead = lead_of.get(id(outcome))
            if lead is not None:
                riders[lead].append(job.id)
                continue
            lead_of[id(outcome)] = job.id
            riders[job.id] = []
        kept.append((job, outcome))
    return kept, riders


class FlowService:
    def __init__(self, db: Database, flow: FlowRepository | None = None) -> None:
        self.db = db
        self.flow = flow or FlowRepository()

    async def observe(self, results: Sequence[tuple[ClaimedJob, Outcome]]) -> frozenset[UUID]:
        """Record what the replies say; returns the executions whose 429 an adaptive handler's
        limiter takes as a refusal (to be put back ENQUEUED with the same attempt). The reply of a
        batch call as a whole (Outcome.shared) counts once, by its first job, and what it decides
        for that job it decides for the others (a 429 taken as a refusal puts them all back)."""
        results, riders = _once_per_call(results)
        moving = [(job, reply) for job, reply in ((j, reply_of(o)) for j, o in results)
                  if job.flow_watch or moves_flow(reply)]
        if not moving:
            return frozenset()
        released: set[UUID] = set()
        async with self.db.transaction() as conn:
            flows = {f.handler: f for f in await self.flow.lock_handlers(conn, sorted({j.handler for j, _ in moving}))}
            # A key's own state moves on an adaptive handler, or with a Retry-After.
            wanted = sorted({(j.handler, j.concurrency_key) for j, r in moving
                             if j.concurrency_key is not None and j.handler in flows
                             and (flows[j.handler].adaptive_on or r.retry_after is not None)})
            keys = {(k.handler, k.key): k for k in await self.flow.lock_keys(conn, wanted)} if wanted else {}

            handler_saves: list[tuple[HandlerFlow, float | None]] = []
            for name, f in flows.items():
                mine = [(j, r) for j, r in moving if j.handler == name]
                own = [(j, r) for j, r in mine if (name, j.concurrency_key) not in keys]  # the handler's limiter
                step = adaptive_after(f.adaptive, f.ceiling, [r for _, r in own], f.now, enabled=f.adaptive_on)
                released |= {j.id for (j, _), back in zip(own, step.released, strict=True) if back}
                handler_saves.append((replace(f, circuit=circuit_after(f.circuit, [r for _, r in mine], f.now),
                                              adaptive=step.state if f.adaptive_on else f.adaptive),
                                      _pause([r for _, r in own])))
            await self.flow.save_handlers(conn, handler_saves)

            key_saves: list[tuple[KeyFlow, float | None]] = []
            for (name, key), k in keys.items():
                f = flows[name]
                mine = [(j, r) for j, r in moving if j.handler == name and j.concurrency_key == key]
                step = adaptive_after(k.adaptive, f.ceiling, [r for _, r in mine], f.now, enabled=f.adaptive_on)
                released |= {j.id for (j, _), back in zip(mine, step.released, strict=True) if back}
                key_saves.append((replace(k, adaptive=step.state if f.adaptive_on else k.adaptive),
                                  _pause([r for _, r in mine])))
            if key_saves:
                await self.flow.save_keys(conn, key_saves)
        return frozenset(released | {rider for lead in released for rider in riders.get(lead, ())})
