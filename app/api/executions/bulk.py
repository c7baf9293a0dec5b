"""DELETE /v1/executions/{id} and the bulk actions: POST /v1/executions/bulk-retry, /bulk-cancel
and /bulk-delete (app/services/bulk.py: not atomic, safe to repeat)."""

from __future__ import annotations

from typing import Annotated
from uuid import UUID

from fastapi import APIRouter, Request
from pydantic import Field, Strict, model_validator
from starlette.responses import Response

from app.api.auth import ManagementRoute, queues_of, requires
from app.api.executions.models import StateName
from app.api.fields import Name, ResponseModel, StrictModel
from app.api.responses import FastJSON, problems
from app.api.services import services_of
from app.domain.access import Scope
from app.domain.states import JobState
from app.services.bulk import MAX_LIMIT, BulkAction, BulkResult, BulkSelection

router = APIRouter(prefix="/v1/executions", tags=["executions"], route_class=ManagementRoute)


class BulkSelectionIn(StrictModel):
    """Which executions: every filter given must match, and at least one is required. Only those
    the action can change are selected (in a state it changes; for a retry, of a handler still
    registered), oldest first, at most `limit`."""

    state: StateName | None = Field(None, description="one state; it must be one the action changes")
    queue: Name | None = None
    handler: Name | None = None
    job_id: Name | None = None
    ids: list[UUID] | None = Field(None, max_length=MAX_LIMIT, description=f"at most {MAX_LIMIT:,} ids")
    limit: Annotated[int, Strict(), Field(ge=1, le=MAX_LIMIT)] = Field(
        MAX_LIMIT, description="the most executions this call selects")
    cursor: str | None = Field(None, max_length=200, description="the previous answer's `next_cursor`, with the same "
                               "filters: this call goes on where that one stopped. Omitted: a first call")
    dry_run: Annotated[bool, Strict()] = Field(False, description="true: change nothing, answer `{matched, more}`: "
                                                                  "how many executions this call would take now")

    @model_validator(mode="after")
    def _a_filter(self) -> BulkSelectionIn:
        if all(v is None for v in (self.state, self.queue, self.handler, self.job_id, self.ids)):
            raise ValueError("give at least one of state, queue, handler, job_id, ids")
        return self

    def selection(self) -> BulkSelection:
        return BulkSelection(state=None if self.state is None else JobState(self.state), queue=self.queue,
                             handler=self.handler, job_id=self.job_id,
                             ids=None if self.ids is None else tuple(self.ids))


class BulkResultOut(ResponseModel):
    """Repeat the request while `more` is true, sending `next_cursor` as `cursor`: the repetition is
    one pass over the executions created by the first call, oldest first, and ends. A row taken once
    is not taken again (a retried job that dead-lettered again at once), and a job enqueued after the
    first call is not taken."""

    matched: int = Field(description="executions selected: matching the filters, ones the action can change, "
                                     "at most `limit`")
    changed: int = Field(description="of those, the ones the action changed")
    skipped: int = Field(description="of those, the ones it did not change (`matched - changed`): they left the "
                                     "selection meanwhile (finished, claimed, changed by someone else; for a retry, "
                                     "their handler deleted)")
    more: bool = Field(description="further executions match beyond `limit`: send the request again, with "
                                   "`next_cursor`")
    next_cursor: str | None = Field(description="where the next call starts (send it as `cursor`); null when "
                                                "`more` is false")


class BulkDryRunOut(ResponseModel):
    """A dry run's answer (`dry_run: true`): nothing changed. The same selection as the call would
    make now, counted: at most `limit` (so a dry run costs no more than the call), with `more` when
    further executions match. Rows may move before the call, which answers what it did."""

    matched: int = Field(description="executions the call would select now: matching the filters, ones the action "
                                     "can change, at most `limit`")
    more: bool = Field(description="further executions match beyond `limit` (the call would answer `more`)")


BulkAnswer = BulkResultOut | BulkDryRunOut


def _view(result: BulkResult) -> dict[str, object]:
    return {"matched": result.matched, "changed": result.changed, "skipped": result.skipped, "more": result.more,
            "next_cursor": result.next_cursor}


async def _apply(request: Request, action: BulkAction, body: BulkSelectionIn) -> Response:
    s = services_of(request)
    if body.dry_run:
        preview = await s.bulk.dry_run(action, body.selection(), body.limit, queues_of(request), body.cursor)
        return FastJSON({"matched": preview.matched, "more": preview.more})
    return FastJSON(_view(await s.bulk.apply(action, body.selection(), body.limit, queues_of(request), body.cursor)))


@router.delete("/{execution_id}", operation_id="deleteExecution", status_code=204, responses=problems(404, 409))
@requires(Scope.OPERATE)
async def delete_execution(execution_id: UUID, request: Request) -> Response:
    """Delete an execution in any state but ENQUEUED and PROCESSING (409), with its logs, steps and
    events. Its idempotency key is free again."""
    s = services_of(request)
    await s.executions.require_visible(execution_id, queues_of(request))  # another queue's: 404
    await s.purge.delete(execution_id)
    return Response(status_code=204)


@router.post("/bulk-retry", operation_id="bulkRetryExecutions", response_model=BulkAnswer)
@requires(Scope.OPERATE)
async def bulk_retry(body: BulkSelectionIn, request: Request) -> Response:
    """DEAD_LETTER and CANCELLED executions → ENQUEUED now, each as a new attempt (as `/retry`);
    those whose handler is no longer registered are not selected (one deleted meanwhile is
    `skipped`)."""
    return await _apply(request, BulkAction.RETRY, body)


@router.post("/bulk-cancel", operation_id="bulkCancelExecutions", response_model=BulkAnswer)
@requires(Scope.OPERATE)
async def bulk_cancel(body: BulkSelectionIn, request: Request) -> Response:
    """ENQUEUED and PROCESSING executions → CANCELLED (as `/cancel`)."""
    return await _apply(request, BulkAction.CANCEL, body)


@router.post("/bulk-delete", operation_id="bulkDeleteExecutions", response_model=BulkAnswer)
@requires(Scope.OPERATE)
async def bulk_delete(body: BulkSelectionIn, request: Request) -> Response:
    """Delete executions in any state but ENQUEUED and PROCESSING, with their logs, steps and events
    (as `DELETE /v1/executions/{id}`)."""
    return await _apply(request, BulkAction.DELETE, body)
