"""GET /healthz (liveness), /readyz (readiness), /metrics (Prometheus text exposition)."""

from __future__ import annotations

from fastapi import APIRouter, Request
from starlette.responses import Response

from app.api.health.metrics import CONTENT_TYPE, render
from app.api.health.models import Health
from app.api.responses import FastJSON, problem, problems
from app.api.services import services_of

router = APIRouter(tags=["health"])


@router.get("/healthz", operation_id="health", response_model=Health)
async def healthz() -> Response:
    return FastJSON({"status": "ok"})


@router.get("/readyz", operation_id="readiness", response_model=Health, responses=problems(503))
async def readyz(request: Request) -> Response:
    """Ready (200) when the database answers and its migrations are at this build's head, or at a
    newer build's (a rolling upgrade: a node of the previous version keeps serving); 503 while the
    database is unreachable or behind this build (migrations not yet applied)."""
    s = services_of(request)
    ready, detail = await s.health.readiness()
    if not ready:
        return problem(503, detail, headers={"retry-after": "5"})
    return FastJSON({"status": "ready"})


@router.get("/metrics", operation_id="metrics", response_class=Response, responses={
    200: {"content": {"text/plain": {"schema": {"type": "string"}}},
          "description": "Prometheus text format 0.0.4"}, **problems(503)})
async def metrics(request: Request) -> Response:
    s = services_of(request)
    return Response(render(await s.metrics.snapshot()), media_type=CONTENT_TYPE)
