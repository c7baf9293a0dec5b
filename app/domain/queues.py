"""Queues: their pause flag and live counts."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class QueueStatus:
    name: str
    paused: bool
    counts: dict[str, int]
    oldest_claimable_age_seconds: float | None
