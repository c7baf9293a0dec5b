"""Domain objects → the JSON shapes of DESIGN §4."""

from __future__ import annotations

from typing import Any

from app.domain.executions import Execution, Handler


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
