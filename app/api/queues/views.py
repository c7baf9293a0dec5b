"""QueueStatus → the JSON shape of QueueOut."""

from __future__ import annotations

from typing import Any

from app.domain.executions import QueueStatus
from app.domain.states import JobState


def queue_view(q: QueueStatus) -> dict[str, Any]:
    return {
        "name": q.name,
        "paused": q.paused,
        "counts": {state.value: q.counts.get(state.value, 0) for state in JobState},
        "oldest_claimable_age_seconds": q.oldest_claimable_age_seconds,
    }
