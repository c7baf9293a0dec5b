"""GET /v1/nodes: the live Jobwire nodes."""

from __future__ import annotations

from dataclasses import asdict

from fastapi import APIRouter, Depends
from starlette.responses import Response

from app.api.body import ManagementRoute
from app.api.responses import FastJSON
from app.api.schemas import NodeList
from app.api.services import Services, services

router = APIRouter(prefix="/v1/nodes", tags=["nodes"], route_class=ManagementRoute)


@router.get("", response_model=NodeList)
async def list_nodes(s: Services = Depends(services)) -> Response:
    """Nodes whose heartbeat is within JOBWIRE_HEARTBEAT_TIMEOUT, with their in-flight HTTP calls.
    A node whose heartbeat is older is taken for dead by the others, but only by a node that has
    itself been connected to the database for one heartbeat timeout since it started or last lost
    the database (after an outage every row is stale, the live nodes' too)."""
    return FastJSON({"items": [asdict(n) for n in await s.coordination.live_nodes()]})
