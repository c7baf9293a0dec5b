"""GET/list executions, their logs, attempts and events, cancel, retry."""

from __future__ import annotations

from typing import Annotated
from uuid import UUID

from fastapi import APIRouter, Path, Query, Request
from starlette.responses import Response

from app.api.auth import ManagementRoute, queues_of, requires
from app.api.executions.models import (AttemptList, BlockerList, EventPage, ExecutionOut, ExecutionPage, LogPage,
                                       SignalIn, SignalPage, SignalSent, StateName)
from app.api.executions.views import attempt_view, blocker_view, event_view, execution_view, log_view
from app.api.fields import Name, QueryTime
from app.api.responses import FastJSON, problems
from app.api.services import services_of
from app.domain.access import Scope
from app.domain.executions import ListFilter
from app.services.executions import metadata_filter

router = APIRouter(prefix="/v1/executions", tags=["executions"], route_class=ManagementRoute)
Limit = Annotated[int, Query(ge=1, le=500, description="items per page")]
SignalName = Annotated[Name, Path(description="the signal's name (a wait names the signals it waits for)")]
Cursor = Annotated[str | None, Query(max_length=200, description="the previous page's `next_cursor`; omitted: the "
                                                                 "first page")]


@router.get("", operation_id="listExecutions", response_model=ExecutionPage)
@requires(Scope.READ)
async def list_executions(
    request: Request,
    state: Annotated[StateName | None, Query(description="only executions in this state")] = None,
    queue: Annotated[Name | None, Query(description="only executions of this queue")] = None,
    handler: Annotated[Name | None, Query(description="only executions of this handler")] = None,
    job_id: Annotated[Name | None, Query(description="only executions of this job_id")] = None,
    idempotency_key: Annotated[Name | None, Query(description="only the execution enqueued with this "
                                                              "idempotency key")] = None,
    concurrency_key: Annotated[Name | None, Query(description="only executions of this concurrency key "
                                                              "(flow control)")] = None,
    metadata: Annotated[str | None, Query(max_length=1000, description=(
        "`key:value`, split on the first `:`: only executions whose metadata's top-level `key` is the "
        "JSON string `value` (`customer:42` matches `{\"customer\": \"42\"}`, not the number 42)"))] = None,
    created_after: Annotated[QueryTime | None, Query(description=(
        "RFC 3339 with an offset: only executions created at or after it"))] = None,
    created_before: Annotated[QueryTime | None, Query(description=(
        "RFC 3339 with an offset: only executions created before it (after `created_after`)"))] = None,
    limit: Limit = 50,
    cursor: Cursor = None,
) -> Response:
    """Newest first, `limit` per page; pass `next_cursor` back as `cursor` for the next page, with
    the same filters. Every filter given must match; each is served by an index (the metadata one
    by a GIN index on the executions that have metadata). A time window is half-open
    (`created_after <= created_at < created_before`); an empty one, `metadata` without a `:`, or a
    time without its offset → 422 naming the parameter."""
    s = services_of(request)
    filters = ListFilter(state=state, queue=queue, handler=handler, job_id=job_id, idempotency_key=idempotency_key,
                         concurrency_key=concurrency_key,
                         metadata=None if metadata is None else metadata_filter(metadata),
                         created_after=created_after, created_before=created_before)
    page = await s.executions.list(filters, limit, cursor, queues_of(request))
    return FastJSON({"items": [execution_view(e) for e in page.items], "next_cursor": page.next_cursor})


@router.get("/{execution_id}", operation_id="getExecution", response_model=ExecutionOut, responses=problems(404))
@requires(Scope.READ)
async def get_execution(execution_id: UUID, request: Request) -> Response:
    s = services_of(request)
    return FastJSON(execution_view(await s.executions.get(execution_id, queues_of(request))))


@router.get("/{execution_id}/logs", operation_id="listExecutionLogs", response_model=LogPage, responses=problems(404))
@requires(Scope.READ)
async def execution_logs(
    execution_id: UUID,
    request: Request,
    limit: Limit = 50,
    cursor: Cursor = None,
) -> Response:
    """The handlers' log entries, oldest (first received) first, each with the attempt that
    wrote it; `limit` per page, pass `next_cursor` back as `cursor`."""
    s = services_of(request)
    page = await s.executions.logs(execution_id, limit, cursor, queues_of(request))
    return FastJSON({"items": [log_view(e) for e in page.items], "next_cursor": page.next_cursor})


@router.get("/{execution_id}/attempts", operation_id="listExecutionAttempts",
            response_model=AttemptList, responses=problems(404, 422))
@requires(Scope.READ)
async def execution_attempts(execution_id: UUID, request: Request) -> Response:
    """One item per attempt dispatched, oldest first: its own outcome (SUCCEEDED, FAILED, ABANDONED,
    CANCELLED; PROCESSING with `ended_at: null` while in flight), times, node, HTTP status and error.
    A claim that was never dispatched (put back to ENQUEUED at the same attempt) is not an attempt."""
    s = services_of(request)
    return FastJSON({"items": [attempt_view(a) for a in await s.executions.attempts(execution_id, queues_of(request))]})


@router.get("/{execution_id}/blockers", operation_id="listExecutionBlockers",
            response_model=BlockerList, responses=problems(404, 422))
@requires(Scope.READ)
async def execution_blockers(execution_id: UUID, request: Request) -> Response:
    """Why an ENQUEUED execution is not running now: every rule of the claim that holds it back,
    read in one snapshot (`scheduled`, `queue_paused`, `handler_concurrency`, `stateful`,
    `no_node_serves_queue`). Empty when nothing does: it is due and waits only for a node's free
    slot, behind the work of higher priority or earlier `scheduled_at`. Waiting spends no attempt.
    A WAITING job of a workflow: `dependencies`, the refs of its parents not terminal yet."""
    s = services_of(request)
    state, blockers = await s.blockers.blockers(execution_id, queues_of(request))
    return FastJSON({"state": state, "items": [blocker_view(b) for b in blockers]})


@router.get("/{execution_id}/events", operation_id="listExecutionEvents",
            response_model=EventPage, responses=problems(404, 422))
@requires(Scope.READ)
async def execution_events(
    execution_id: UUID,
    request: Request,
    limit: Limit = 50,
    cursor: Cursor = None,
) -> Response:
    """The execution's transition events, oldest first: attempt outcomes (`execution.succeeded`,
    `.failed`, `.abandoned`, `.dead_lettered`) and user actions (`.cancelled`, `.retried`), each
    `{id, type, occurred_at, data}` with `data` the curated event (no payload, result, error text or
    parameters), plus `retry_at` on a failed or abandoned attempt that another follows. Inserts,
    claims and re-enqueues are not listed. `limit` per page, pass `next_cursor` back as `cursor`."""
    s = services_of(request)
    page = await s.executions.events(execution_id, limit, cursor, queues_of(request))
    return FastJSON({"items": [event_view(e) for e in page.items], "next_cursor": page.next_cursor})


@router.post("/{execution_id}/signals/{name}", operation_id="sendSignal", response_model=SignalSent, status_code=202,
             responses=problems(404, 409, 413))
@requires(Scope.OPERATE)
async def send_signal(execution_id: UUID, name: SignalName, request: Request, body: SignalIn | None = None) -> Response:
    """Send a named signal to an execution: a durable mailbox. A suspended execution waiting for the
    name resumes at once (`woke: true`); otherwise the signal is kept, and the first wait that names
    it consumes it, once, even with two nodes. A finished execution → 409."""
    s = services_of(request)
    sent = await s.signals.send(execution_id, name, body.payload if body else None, queues_of(request))
    return FastJSON({"id": sent.id, "woke": sent.woke}, status_code=202)


@router.get("/{execution_id}/signals", operation_id="listSignals", response_model=SignalPage,
            responses=problems(404, 422))
@requires(Scope.READ)
async def list_signals(execution_id: UUID, request: Request, limit: Limit = 50, cursor: Cursor = None) -> Response:
    """The signals sent to the execution, oldest first, each with `consumed_at` once a wait took it."""
    s = services_of(request)
    page = await s.signals.list(execution_id, limit, cursor, queues_of(request))
    return FastJSON({"items": [{"id": x.id, "name": x.name, "payload": x.payload, "sent_at": x.sent_at,
                                "consumed_at": x.consumed_at} for x in page.items],
                     "next_cursor": page.next_cursor})


@router.post("/{execution_id}/cancel", operation_id="cancelExecution",
             response_model=ExecutionOut, responses=problems(404, 409))
@requires(Scope.OPERATE)
async def cancel_execution(execution_id: UUID, request: Request) -> Response:
    """ENQUEUED or PROCESSING → CANCELLED. A running handler learns it from its progress callback."""
    s = services_of(request)
    return FastJSON(execution_view(await s.executions.cancel(execution_id, queues_of(request))))


@router.post("/{execution_id}/retry", operation_id="retryExecution",
             response_model=ExecutionOut, responses=problems(404, 409))
@requires(Scope.OPERATE)
async def retry_execution(execution_id: UUID, request: Request) -> Response:
    """DEAD_LETTER or CANCELLED → ENQUEUED now, as a new attempt."""
    s = services_of(request)
    return FastJSON(execution_view(await s.executions.retry(execution_id, queues_of(request))))
