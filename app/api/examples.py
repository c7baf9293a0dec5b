"""The examples the OpenAPI document shows, one story throughout: a handler `resize-image`, a job
enqueued to it, the execution it became, a schedule that fires it nightly and the dispatch its
handler receives, and a validation problem. tests/unit/test_openapi_examples.py checks each
against its model."""

from __future__ import annotations

from typing import Any

EXECUTION_ID = "0193a1f2-7c4e-7b1a-9d2e-5f6a7b8c9d0e"
CREATED_AT = "2026-12-01T09:30:00.123456Z"

VALIDATION_EXAMPLE: dict[str, Any] = {
    "type": "https://jobwire.dev/problems/validation-error",
    "title": "Validation failed",
    "status": 422,
    "detail": "handler: field required; priority: Input should be less than or equal to 2147483647",
    "errors": [{"field": "handler", "message": "field required"},
               {"field": "priority", "message": "Input should be less than or equal to 2147483647"}],
}

JOB_EXAMPLE: dict[str, Any] = {
    "handler": "resize-image",
    "job_id": "resize-42",
    "queue": "images",
    "payload": {"image": "s3://uploads/42.png", "width": 640},
    "max_attempts": 3,
    "idempotency_key": "upload-42",
}

EXECUTION_EXAMPLE: dict[str, Any] = {
    "id": EXECUTION_ID,
    "job_id": "resize-42",
    "job_type": "DELAYED",
    "handler": "resize-image",
    "queue": "images",
    "state": "ENQUEUED",
    "attempt": 0,
    "max_attempts": 3,
    "priority": 0,
    "stateful": False,
    "payload": {"image": "s3://uploads/42.png", "width": 640},
    "parameters": None,
    "metadata": None,
    "result": None,
    "progress": {"total": 0, "succeeded": 0, "failed": 0, "status": None, "percentage": 0},
    "scheduled_at": CREATED_AT,
    "created_at": CREATED_AT,
    "started_at": None,
    "completed_at": None,
    "deadline_at": None,
    "locked_by": None,
    "last_error": None,
    "error_type": None,
    "concurrency_key": None,
}

BATCH_EXAMPLE: dict[str, Any] = {
    "jobs": [
        {"handler": "resize-image", "payload": {"image": "s3://uploads/43.png", "width": 640}},
        {"handler": "resize-image", "payload": {"image": "s3://uploads/44.png", "width": 320}, "priority": 10},
    ],
}

HANDLER_EXAMPLE: dict[str, Any] = {
    "url": "https://workers.example.com/jobs/resize-image",
    "timeout_seconds": 30,
    "max_concurrency": 8,
}

HANDLER_OUT_EXAMPLE: dict[str, Any] = {
    "name": "resize-image",
    "url": "https://workers.example.com/jobs/resize-image",
    "timeout_seconds": 30.0,
    "max_concurrency": 8,
    "stateful": False,
    "created_at": CREATED_AT,
    "updated_at": CREATED_AT,
    "secret": "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
    "secrets": [{"id": "0193a1f2-7c4e-7b1a-9d2e-000000000001", "created_at": CREATED_AT, "expires_at": None}],
}

SCHEDULE_EXAMPLE: dict[str, Any] = {
    "cron": "0 30 2 * * *",
    "timezone": "Europe/Paris",
    "handler": "resize-image",
    "queue": "images",
    "payload": {"sweep": "thumbnails"},
    "overlap_policy": "SKIP",
}

SCHEDULE_OUT_EXAMPLE: dict[str, Any] = {
    "job_id": "nightly-thumbnails",
    "cron": "0 30 2 * * *",
    "timezone": "Europe/Paris",
    "handler": "resize-image",
    "queue": "images",
    "payload": {"sweep": "thumbnails"},
    "parameters": None,
    "metadata": None,
    "priority": 0,
    "enabled": True,
    "execution_mode": "SINGLE_INSTANCE",
    "overlap_policy": "SKIP",
    "misfire_policy": "FIRE_ONCE",
    "max_attempts": 5,
    "tracked": True,
    "next_fire_at": "2026-12-02T01:30:00Z",
    "last_fired_at": None,
    "last_success_at": None,
    "last_failure_at": None,
    "consecutive_failures": 0,
    "created_at": CREATED_AT,
    "updated_at": CREATED_AT,
}

DISPATCH_EXAMPLE: dict[str, Any] = {
    "execution_id": EXECUTION_ID,
    "job_id": "resize-42",
    "job_type": "DELAYED",
    "queue": "images",
    "attempt": 0,
    "max_attempts": 3,
    "payload": {"image": "s3://uploads/42.png", "width": 640},
    "parameters": None,
    "metadata": None,
    "scheduled_at": CREATED_AT,
    "started_at": "2026-12-01T09:30:00.234567Z",
    "deadline": "2026-12-01T09:30:30.234567Z",
    "callback": {"url": f"https://jobwire.example.com/v1/executions/{EXECUTION_ID}",
                 "token": "0.q2G7uKx3yJ4c0pZ9hVbT1mN8wE5rL6sD2fA7gH3jK4M"},
}

# The example each component schema shows. Set on the document after FastAPI writes it
# (app/api/app.py): FastAPI drops the nulls of examples declared on the models, and an
# execution's example would lose its required `started_at: null`.
SCHEMA_EXAMPLES: dict[str, dict[str, Any]] = {
    "JobIn": JOB_EXAMPLE,
    "BatchIn": BATCH_EXAMPLE,
    "ExecutionOut": EXECUTION_EXAMPLE,
    "BatchOut": {"items": [{**EXECUTION_EXAMPLE, "created": True}]},
    "HandlerIn": HANDLER_EXAMPLE,
    "HandlerOut": HANDLER_OUT_EXAMPLE,
    "ScheduleIn": SCHEDULE_EXAMPLE,
    "ScheduleOut": SCHEDULE_OUT_EXAMPLE,
    "DispatchRequest": DISPATCH_EXAMPLE,
    "Problem": VALIDATION_EXAMPLE,
}
