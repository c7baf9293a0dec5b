"""QueueStatus → the JSON shape of QueueOut."""

from __future__ import annotations

from typing import Any

from app.domain.queues import QueueStatus
from app.domain.states import JobState

# The live states and the dead letters; finished totals are not counted (app/services/queues.py).
COUNTED = (JobState.ENQUEUED.value, JobState.PROCESSING.value, JobState.DEAD_LETTER.value)


def queue_view(q: QueueStatus) -> dict[str, Any]:
    return {
        "name": q.name,
        "paused": q.paused,
        "counts": {state: q.counts.get(state, 0) for state in COUNTED},
        "oldest_claimable_age_seconds": q.oldest_claimable_age_seconds,
    }
