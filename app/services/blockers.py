"""Why an ENQUEUED execution is not running now (GET /v1/executions/{id}/blockers)."""

from __future__ import annotations

from uuid import UUID

from app.db.blockers import BlockerRepository
from app.db.database import Database
from app.domain.access import may_use
from app.domain.blockers import Blocker, blockers_of
from app.domain.errors import NotFound


class BlockerService:
    def __init__(self, db: Database, heartbeat_timeout: float, blockers: BlockerRepository | None = None) -> None:
        self.db = db
        self.heartbeat_timeout = heartbeat_timeout
        self.repository = blockers or BlockerRepository()

    async def blockers(self, execution_id: UUID, queues: frozenset[str] | None = None) -> tuple[str, list[Blocker]]:
        """The execution's state and what holds it back (nothing unless it is ENQUEUED). NotFound
        for an execution that does not exist, or of a queue outside `queues` (None: any)."""
        async with self.db.transaction() as conn:  # one snapshot for every fact
            facts = await self.repository.facts(conn, execution_id, self.heartbeat_timeout)
        if facts is None or not may_use(queues, facts.queue):
            raise NotFound("execution", execution_id)
        return facts.state, blockers_of(facts)
