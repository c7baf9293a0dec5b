"""Schedule → the JSON shape of ScheduleOut."""

from __future__ import annotations

from typing import Any

from app.domain.schedules import Schedule


def schedule_view(s: Schedule) -> dict[str, Any]:
    spec = s.spec
    return {
        "job_id": s.job_id,
        "cron": spec.cron,
        "timezone": spec.timezone,
        "handler": spec.handler,
        "queue": spec.queue,
        "payload": spec.payload,
        "parameters": spec.parameters,
        "metadata": spec.metadata,
        "priority": spec.priority,
        "enabled": spec.enabled,
        "execution_mode": spec.execution_mode.value,
        "overlap_policy": spec.overlap_policy.value,
        "misfire_policy": spec.misfire_policy.value,
        "max_attempts": spec.max_attempts,
        "tracked": spec.tracked,
        "next_fire_at": s.next_fire_at,
        "last_fired_at": s.last_fired_at,
        "last_success_at": s.last_success_at,
        "last_failure_at": s.last_failure_at,
        "consecutive_failures": s.consecutive_failures,
        "created_at": s.created_at,
        "updated_at": s.updated_at,
    }
