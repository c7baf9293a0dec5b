"""Execution → the JSON shape of ExecutionOut; a log entry → LogOut; an attempt → AttemptOut; an
event → EventOut."""

from __future__ import annotations

from typing import Any

from app.domain.attempts import Attempt
from app.domain.blockers import Blocker
from app.domain.events import Event
from app.domain.executions import Execution
from app.domain.logs import StoredLog


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
        "progress": None if p is None else {"total": p.total, "succeeded": p.succeeded, "failed": p.failed,
                                            "status": p.status, "percentage": p.percentage},
        "scheduled_at": e.scheduled_at,
        "created_at": e.created_at,
        "started_at": e.started_at,
        "completed_at": e.completed_at,
        "deadline_at": e.deadline_at,
        "locked_by": e.locked_by,
        "last_error": e.last_error,
        "error_type": e.error_type,
        "concurrency_key": e.concurrency_key,
        "workflow": None if e.workflow_id is None else {"id": str(e.workflow_id), "ref": e.workflow_ref},
    }


def log_view(entry: StoredLog) -> dict[str, Any]:
    return {"attempt": entry.attempt, "level": entry.level.value, "message": entry.message,
            "logged_at": entry.logged_at}


def attempt_view(a: Attempt) -> dict[str, Any]:
    return {"attempt": a.attempt, "state": a.state.value, "started_at": a.started_at, "ended_at": a.ended_at,
            "duration_ms": a.duration_ms, "node": a.node, "error_type": a.error_type, "error": a.error,
            "http_status": a.http_status}


def event_view(e: Event) -> dict[str, Any]:
    # data as stored: the curated event is the same document wherever it is delivered.
    return {"id": e.id, "type": e.type.value, "occurred_at": e.occurred_at, "data": e.data}


def blocker_view(b: Blocker) -> dict[str, Any]:
    """The reason and the data it has (the fields of other reasons left out)."""
    view: dict[str, Any] = {"reason": b.reason.value}
    for name in ("until", "queue", "in_flight", "limit", "execution_id", "state", "key", "next_slot"):
        value = getattr(b, name)
        if value is not None:
            view[name] = value
    if b.refs is not None:
        view["refs"] = list(b.refs)
    if b.reason.value == "suspended":
        view["signals"] = list(b.signals or ())
        view["timeout_at"] = b.timeout_at
        view["children"] = b.children
    return view
