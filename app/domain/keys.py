"""A handler's concurrency keys as the claim sees them: waiting and in-flight jobs, the rate
window, paused, a Retry-After."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum


class KeyState(StrEnum):
    WAITING = "waiting"  # has ENQUEUED jobs
    THROTTLED = "throttled"  # has ENQUEUED jobs and is held back now
    PAUSED = "paused"  # POST /v1/handlers/{name}/keys/{key}/pause


@dataclass(frozen=True, slots=True)
class KeyStatus:
    key: str
    waiting: int  # ENQUEUED jobs
    in_flight: int  # PROCESSING jobs
    paused: bool
    rate_count: int  # calls started in the key's current rate window (0 without key_rate_limit)
    rate_window_start: datetime | None
    rate_next_slot: datetime | None  # when its rate limit lets the next call start, while ahead
    retry_after: datetime | None  # a 429 or 503 with Retry-After holds the key until then
