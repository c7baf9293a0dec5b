"""Domain objects → the JSON shapes of DESIGN §4."""

from __future__ import annotations

from typing import Any

from app.domain.executions import Execution, Handler
from app.domain.schedules import Schedule


def execution_view(e: Execution) -> dict[str, Any]:
    p = e.progress
    return {
        "id": str(e.id),
        "job_id": e.job_id,
        "job_type": e.job_type.value,
        "handler": e.handler,
        "queue": e.queue,
        "state": e.state.value,
        "attempt": e.attempt,
        "max_attempts": e.max_attempts,
        "priority": e.priority,
        "stateful": e.stateful,
        "payload": e.payload,
        "parameters": e.parameters,
        "metadata": e.metadata,
        "result": e.result,
        "progress": {"total": p.total, "succeeded": p.succeeded, "failed": p.failed,
                     "status": p.status, "percentage": p.percentage},
        "scheduled_at": e.scheduled_at,
        "created_at": e.created_at,
        "started_at": e.started_at,
        "completed_at": e.completed_at,
        "deadline_at": e.deadline_at,
        "locked_by": e.locked_by,
        "last_error": e.last_error,
        "error_type": e.error_type,
    }


def handler_view(h: Handler, *, with_secret: bool = False) -> dict[str, Any]:
    view: dict[str, Any] = {
        "name": h.name,
        "url": h.url,
        "timeout_seconds": h.timeout_seconds,
        "max_concurrency": h.max_concurrency,
        "stateful": h.stateful,
        "created_at": h.created_at,
        "updated_at": h.updated_at,
    }
    if with_secret:
        view["secret"] = h.secret
    return view


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
