"""Handler batching (DESIGN §9): a handler's due jobs sent together, one POST of
`{"executions": [...]}` answered by `{"outcomes": [...]}`, each job keeping its own attempt."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Batch:
    """Due jobs sent together: up to `max_size` in one call, a smaller group waiting up to
    `max_wait_ms` for more (app/dispatcher/batching.py)."""

    max_size: int
    max_wait_ms: int = 0

    def document(self) -> dict[str, int]:
        """As the API shows it and job_handlers stores it (the claim returns it)."""
        return {"max_size": self.max_size, "max_wait_ms": self.max_wait_ms}


# The bounds the API checks (HandlerIn) and the dispatcher relies on.
MAX_BATCH_SIZE = 500
MAX_BATCH_WAIT_MS = 1000
