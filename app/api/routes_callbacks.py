"""Callbacks from handlers (DESIGN §5). They take the callback token only, never API keys."""

from __future__ import annotations

from uuid import UUID

from fastapi import APIRouter, Depends, Request
from starlette.responses import Response

from app.api.auth import bearer_token
from app.api.body import StrictJSONRoute
from app.api.responses import FastJSON
from app.api.schemas import CancelRequested, CompleteIn, ExecutionOut, ProgressIn
from app.api.services import Services, services
from app.api.views import execution_view
from app.services.callbacks import Completion

router = APIRouter(prefix="/v1/executions", tags=["callbacks"], route_class=StrictJSONRoute)


@router.post("/{execution_id}/complete", response_model=ExecutionOut)
async def complete(execution_id: UUID, body: CompleteIn, request: Request,
                   s: Services = Depends(services)) -> Response:
    """Report the outcome of an accepted (202) attempt. One that cannot apply is a 200 no-op."""
    completion = Completion(
        succeeded=body.outcome == "succeeded",
        result=body.result,
        error_message=body.error.message if body.error else None,
        error_type=body.error.type if body.error else None,
        retryable=body.retryable,
    )
    execution = await s.callbacks.complete(execution_id, bearer_token(request), completion)
    return FastJSON(execution_view(execution))


@router.post("/{execution_id}/progress", response_model=CancelRequested)
async def progress(execution_id: UUID, body: ProgressIn, request: Request,
                   s: Services = Depends(services)) -> Response:
    """Store a progress snapshot (omitted fields keep their values) and extend the deadline to
    now + timeout. `cancel_requested` is true once the execution is no longer PROCESSING."""
    snapshot = body.model_dump(exclude_unset=True)
    cancel = await s.callbacks.report_progress(execution_id, bearer_token(request), snapshot or None)
    return FastJSON({"cancel_requested": cancel})


@router.post("/{execution_id}/heartbeat", response_model=CancelRequested)
async def heartbeat(execution_id: UUID, request: Request, s: Services = Depends(services)) -> Response:
    """Extend the deadline to now + timeout without a snapshot; answers `cancel_requested`."""
    cancel = await s.callbacks.report_progress(execution_id, bearer_token(request), None)
    return FastJSON({"cancel_requested": cancel})
