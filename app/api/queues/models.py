"""Response models of /v1/queues."""

from __future__ import annotations

from pydantic import Field

from app.api.fields import ResponseModel


class QueueCounts(ResponseModel):
    """Executions of the queue by state, 0 included."""

    ENQUEUED: int = Field(description="due and scheduled")
    PROCESSING: int
    DEAD_LETTER: int


class QueueOut(ResponseModel):
    name: str
    paused: bool
    counts: QueueCounts = Field(
        description="executions ENQUEUED (due and scheduled), PROCESSING and DEAD_LETTER, 0 included; finished "
                    "totals are not counted (they would read the whole history: Prometheus counters give the rates)")
    oldest_claimable_age_seconds: float | None = Field(
        description="age of the oldest due ENQUEUED job (database time); null when none is due")


class QueueList(ResponseModel):
    items: list[QueueOut]
