"""Liveness and readiness."""

from __future__ import annotations

from fastapi import APIRouter, Depends
from starlette.responses import Response

from app.api.responses import FastJSON, problem
from app.api.schemas import Health, problems
from app.api.services import Services, services

router = APIRouter(tags=["health"])


@router.get("/healthz", response_model=Health)
async def healthz() -> Response:
    return FastJSON({"status": "ok"})


@router.get("/readyz", response_model=Health, responses=problems(503))
async def readyz(s: Services = Depends(services)) -> Response:
    ready, detail = await s.health.readiness()
    if not ready:
        return problem(503, detail, headers={"retry-after": "5"})
    return FastJSON({"status": "ready"})
