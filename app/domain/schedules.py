"""Cron schedules (DESIGN §6.3): the stored definition and its policies."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any


class ExecutionMode(StrEnum):
    SINGLE_INSTANCE = "SINGLE_INSTANCE"  # one execution per instant, whichever node wins the insert
    EVERY_INSTANCE = "EVERY_INSTANCE"  # one execution per instant on every live node


class OverlapPolicy(StrEnum):
    SKIP = "SKIP"  # no new fire while the previous is ENQUEUED or PROCESSING
    QUEUE_ONE = "QUEUE_ONE"  # at most one fire held back, made when the previous ends


class MisfirePolicy(StrEnum):
    FIRE_ONCE = "FIRE_ONCE"  # one catch-up execution for the latest missed instant
    SKIP = "SKIP"  # wait for the next instant


@dataclass(frozen=True, slots=True)
class ScheduleSpec:
    """What a PUT declares; the caller's definition replaces the stored one."""

    cron: str
    handler: str
    timezone: str = "UTC"
    queue: str = "default"
    payload: Any = None
    parameters: Any = None
    metadata: Any = None
    priority: int = 0
    enabled: bool = True
    execution_mode: ExecutionMode = ExecutionMode.SINGLE_INSTANCE
    overlap_policy: OverlapPolicy = OverlapPolicy.SKIP
    misfire_policy: MisfirePolicy = MisfirePolicy.FIRE_ONCE
    max_attempts: int = 5
    tracked: bool = True


@dataclass(frozen=True, slots=True)
class Schedule:
    job_id: str
    spec: ScheduleSpec
    next_fire_at: datetime | None
    last_fired_at: datetime | None
    last_success_at: datetime | None
    last_failure_at: datetime | None
    consecutive_failures: int
    created_at: datetime
    updated_at: datetime


@dataclass(frozen=True, slots=True)
class FireSlot:
    """A schedule read for firing, under its slot's lock: the cursor of this slot and the clock."""

    schedule: Schedule
    fire_node: str
    handled_until: datetime | None
    pending_fire_at: datetime | None
    now: datetime
