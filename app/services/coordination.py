"""Heartbeats, dead-node recovery and deadline enforcement: the coordinator's use cases.

Every node runs them; no leader is needed because every write is guarded (state, attempt) and
the selections use SKIP LOCKED, so racing scanners share the work and never end an attempt twice.
A node judges others dead, and abandons attempts past their deadline, only as the outage rule
(app.domain.outage) allows: never straight after its own database came back.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from app.db.database import Database
from app.db.executions import ExecutionRepository
from app.db.nodes import NodeRepository
from app.db.waits import WaitRepository
from app.domain.errors import DatabaseUnavailable
from app.domain.executions import ErrorType, Execution
from app.domain.nodes import Node
from app.domain.outage import OutageRule
from app.services.outcomes import log_attempt_ends
from app.services.wakeups import wake_for_freed_slots

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class CoordinationConfig:
    node_id: str
    heartbeat_timeout: float
    batch_size: int = 500
    queues: tuple[str, ...] | None = None  # the queues this node claims from; None: every queue


@dataclass(slots=True)
class ScanReport:
    recovered: int = 0  # executions taken back from dead nodes
    abandoned: int = 0  # executions past their deadline
    forgotten: list[str] = field(default_factory=list)  # dead nodes whose heartbeat row went
    deferred: list[str] = field(default_factory=list)  # stale nodes not judged yet (the outage rule)


class CoordinationService:
    def __init__(
        self,
        db: Database,
        config: CoordinationConfig,
        executions: ExecutionRepository | None = None,
        nodes: NodeRepository | None = None,
        outage: OutageRule | None = None,
    ) -> None:
        self.db = db
        self.config = config
        self.executions = executions or ExecutionRepository()
        self.nodes = nodes or NodeRepository()
        self.waits = WaitRepository()
        self.outage = outage or OutageRule(config.heartbeat_timeout)
        self._failures_seen = db.failures

    async def beat(self) -> None:
        failures = self.db.failures
        try:
            async with self.db.transaction() as conn:
                written_at = await self.nodes.heartbeat(conn, self.config.node_id, self.config.queues)
        except DatabaseUnavailable:
            self.outage.failed()
            raise
        # Any unit of work of this node that found the database away since the last heartbeat
        # counts as a failure: the rule counts from this heartbeat on.
        self.outage.heartbeat_written(written_at, failed_since_last=failures != self._failures_seen)
        self._failures_seen = failures

    async def live_nodes(self) -> list[Node]:
        async with self.db.transaction() as conn:
            return await self.nodes.live(conn, self.config.heartbeat_timeout)

    async def scan(self) -> ScanReport:
        report = ScanReport()
        await self.recover_dead_nodes(report)
        report.abandoned = await self.abandon_past_deadlines()
        return report

    async def recover_dead_nodes(self, report: ScanReport | None = None) -> ScanReport:
        """Abandon (and retry) what dead nodes held; forget a dead node only once all of it committed."""
        report = report if report is not None else ScanReport()
        async with self.db.transaction() as conn:
            dead = await self.nodes.dead(conn, self.config.heartbeat_timeout, self.config.node_id)
            if dead and not self.outage.may_judge_others(await self.nodes.now(conn)):
                report.deferred = dead
                return report
        for node in dead:
            recovered = 0
            while True:
                async with self.db.transaction() as conn:
                    ended = await self.executions.abandon_attempts_held_by(
                        conn, [node], self.config.batch_size,
                        error=f"node {node} stopped heartbeating during the call",
                        error_type=ErrorType.ABANDONED_NODE)
                    await self._wake_dispatchers(conn, [a.execution for a in ended])
                log_attempt_ends(log, ended)  # committed
                recovered += len(ended)
                if len(ended) < self.config.batch_size:
                    break
            report.recovered += recovered
            async with self.db.transaction() as conn:
                if await self.nodes.forget_if_idle(conn, node):
                    report.forgotten.append(node)
            if recovered:
                log.warning("node %s is dead: %d of its executions abandoned and retried", node, recovered)
        return report

    async def wake_suspended(self) -> int:
        """Resume the suspended executions whose time came (`until`, or a timeout): ENQUEUED, due
        now, the same attempt. Every node runs it; SKIP LOCKED shares the rows."""
        total = 0
        while True:
            async with self.db.transaction() as conn:
                queues = await self.waits.resume(conn, None, self.config.batch_size)
                if queues:
                    await self.executions.notify(conn, self.db.notify_channel)
            total += len(queues)
            if len(queues) < self.config.batch_size:
                return total

    async def abandon_past_deadlines(self) -> int:
        async with self.db.autocommit() as conn:
            if not self.outage.may_abandon_past_deadlines(await self.nodes.now(conn)):
                return 0
        total = 0
        while True:
            async with self.db.transaction() as conn:
                ended = await self.executions.abandon_attempts_past_deadline(
                    conn, self.config.batch_size, error="no outcome by the attempt's deadline",
                    error_type=ErrorType.ABANDONED_DEADLINE)
                await self._wake_dispatchers(conn, [a.execution for a in ended])
            log_attempt_ends(log, ended)  # committed
            total += len(ended)
            if len(ended) < self.config.batch_size:
                return total

    async def seconds_to_next_deadline(self) -> float | None:
        """Seconds (database time) until the earliest deadline of any PROCESSING attempt; None
        when none is PROCESSING."""
        async with self.db.autocommit() as conn:
            return await self.executions.seconds_to_next_deadline(conn)

    async def forget_self(self) -> bool:
        """At shutdown: delete this node's heartbeat row, unless it still holds executions."""
        async with self.db.transaction() as conn:
            return await self.nodes.forget_if_idle(conn, self.config.node_id)

    async def _wake_dispatchers(self, conn: object, ended: list[Execution]) -> None:
        await wake_for_freed_slots(self.db, self.executions, conn, ended)
