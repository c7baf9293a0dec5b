"""Rows → domain objects: one decoder per shape, over asyncpg's Record (a mapping by column name)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson

from app.domain.attempts import Attempt, AttemptEnd
from app.domain.dispatch import ClaimedJob
from app.domain.events import Event, EventType
from app.domain.executions import Execution, JobType, Progress
from app.domain.flow import ADAPTIVE_START, Circuit, CircuitState
from app.domain.handlers import Batch, Handler, RateLimit
from app.domain.handler_secrets import HandlerSecret
from app.domain.schedules import ExecutionMode, MisfirePolicy, OverlapPolicy, Schedule, ScheduleSpec
from app.domain.states import JobState


# Value → member by dict lookup: calling the Enum class is a few microseconds each, paid twice
# per row in a batch enqueue's 1,000 returned rows.
_JOB_TYPES = {t.value: t for t in JobType}
_STATES = {s.value: s for s in JobState}
_EVENT_TYPES = {t.value: t for t in EventType}


def to_progress(value: Any) -> Progress | None:
    """None while the handler has reported no progress (the column is NULL until then)."""
    if not isinstance(value, dict):
        return None
    return Progress(
        total=int(value.get("total") or 0),
        succeeded=int(value.get("succeeded") or 0),
        failed=int(value.get("failed") or 0),
        status=value.get("status"),
    )


def execution_from(m: Mapping[str, Any]) -> Execution:
    """An execution from a row naming queries.EXECUTION_COLUMNS (the domain's fields: a test
    checks they are the same)."""
    return Execution(
        id=m["id"],
        job_id=m["job_id"],
        job_type=_JOB_TYPES[m["job_type"]],
        handler=m["handler"],
        queue=m["queue"],
        state=_STATES[m["state"]],
        attempt=m["attempt"],
        max_attempts=m["max_attempts"],
        priority=m["priority"],
        stateful=m["stateful"],
        payload=m["payload"],
        parameters=m["parameters"],
        metadata=m["metadata"],
        result=m["result"],
        progress=to_progress(m["progress"]),
        scheduled_at=m["scheduled_at"],
        created_at=m["created_at"],
        started_at=m["started_at"],
        completed_at=m["completed_at"],
        deadline_at=m["deadline_at"],
        locked_by=m["locked_by"],
        last_error=m["last_error"],
        error_type=m["error_type"],
        timeout_seconds=m["timeout_seconds"],
        max_duration_seconds=m["max_duration_seconds"],
        concurrency_key=m["concurrency_key"],
        workflow_id=m["workflow_id"],
        workflow_ref=m["workflow_ref"],
    )


def attempt_end_from(m: Mapping[str, Any]) -> AttemptEnd:
    """An outcome write's row: the execution's columns and the attempt it ended (ended_*)."""
    return AttemptEnd(
        execution=execution_from(m),
        outcome=_STATES[m["ended_as"]],
        attempt=m["ended_attempt"],
        started_at=m["ended_started_at"],
        ended_at=m["ended_at"],
        node=m["ended_node"],
    )


def attempt_from(m: Mapping[str, Any]) -> Attempt:
    return Attempt(
        attempt=m["attempt"],
        state=_STATES[m["state"]],
        started_at=m["started_at"],
        ended_at=m["ended_at"],
        node=m["node"],
        error_type=m["error_type"],
        error=m["error"],
        http_status=m["http_status"],
    )


def event_from(m: Mapping[str, Any]) -> Event:
    return Event(id=m["id"], type=_EVENT_TYPES[m["type"]], occurred_at=m["occurred_at"], data=m["data"])


def _embedded_json(text: str | None) -> orjson.Fragment | None:
    return None if text is None else orjson.Fragment(text)


def claimed_from(m: Mapping[str, Any]) -> ClaimedJob:
    """A claimed row (as a mapping) whose payload, parameters and metadata came as JSON text:
    they are kept as orjson fragments, embedded in the handler's request body as they are."""
    return ClaimedJob(
        id=m["id"],
        job_id=m["job_id"],
        job_type=m["job_type"],
        queue=m["queue"],
        attempt=m["attempt"],
        max_attempts=m["max_attempts"],
        payload=_embedded_json(m["payload"]),
        parameters=_embedded_json(m["parameters"]),
        metadata=_embedded_json(m["metadata"]),
        scheduled_at=m["scheduled_at"],
        started_at=m["started_at"],
        deadline_at=m["deadline_at"],
        seconds_left=float(m["seconds_left"]),
        handler=m["handler"],
        handler_url=m["handler_url"],
        handler_secret=m["handler_secret"],
        handler_secrets=tuple(m["handler_secrets"] or ()),
        concurrency_key=m["concurrency_key"],
        flow_watch=m["flow_watch"],
        workflow=None if m["workflow"] is None else _embedded_json(m["workflow"]),
        continuation=None if m["continuation"] is None else orjson.loads(m["continuation"]),
        batch=batch_from(m.get("handler_batch")),
    )


def handler_from(m: Mapping[str, Any], secrets: tuple[HandlerSecret, ...] = ()) -> Handler:
    """A handler from its row (job_handlers.secret, deprecated, is never read) with its secrets as
    listed."""
    return Handler(
        name=m["name"],
        url=m["url"],
        timeout_seconds=m["timeout_seconds"],
        max_concurrency=m["max_concurrency"],
        stateful=m["stateful"],
        created_at=m["created_at"],
        updated_at=m["updated_at"],
        secrets=secrets,
        key_concurrency=m["key_concurrency"],
        rate_limit=rate_limit_from(m["rate_limit"]),
        key_rate_limit=rate_limit_from(m["key_rate_limit"]),
        adaptive=m["adaptive"],
        circuit=Circuit(state=CircuitState(m["circuit_state"]), until=m["circuit_until"],
                        failures=m["circuit_failures"]),
        # Not started yet: the limit its first claim would use.
        adaptive_limit=(m["adaptive_limit"] or min(m["max_concurrency"] or 1, ADAPTIVE_START)) if m["adaptive"]
        else None,
        adaptive_since=m["adaptive_since"] if m["adaptive"] else None,
        batch=batch_from(m["batch"]),
    )


def batch_from(value: Any) -> Batch | None:
    """job_handlers.batch ({"max_size", "max_wait_ms"}, as a decoded document or JSON text) as a Batch."""
    if value is None:
        return None
    if isinstance(value, str):
        value = orjson.loads(value)
    return Batch(max_size=int(value["max_size"]), max_wait_ms=int(value.get("max_wait_ms") or 0))


def rate_limit_from(value: Any) -> RateLimit | None:
    """job_handlers.rate_limit / key_rate_limit ({"limit", "period_seconds"}) as a RateLimit."""
    if value is None:
        return None
    return RateLimit(limit=int(value["limit"]), period_seconds=float(value["period_seconds"]))



def handler_secret_from(m: Mapping[str, Any]) -> HandlerSecret:
    return HandlerSecret(id=m["id"], created_at=m["created_at"], expires_at=m["expires_at"])


def schedule_from(m: Mapping[str, Any]) -> Schedule:
    return Schedule(
        job_id=m["job_id"],
        spec=ScheduleSpec(
            cron=m["cron_expression"],
            timezone=m["timezone"],
            handler=m["handler"],
            queue=m["queue"],
            payload=m["payload"],
            parameters=m["parameters"],
            metadata=m["metadata"],
            priority=m["priority"],
            enabled=m["enabled"],
            execution_mode=ExecutionMode(m["execution_mode"]),
            overlap_policy=OverlapPolicy(m["overlap_policy"]),
            misfire_policy=MisfirePolicy(m["misfire_policy"]),
            max_attempts=m["max_attempts"],
            tracked=m["tracked"],
        ),
        next_fire_at=m["next_fire_at"],
        last_fired_at=m["last_fired_at"],
        last_success_at=m["last_success_at"],
        last_failure_at=m["last_failure_at"],
        consecutive_failures=m["consecutive_failures"],
        created_at=m["created_at"],
        updated_at=m["updated_at"],
    )
