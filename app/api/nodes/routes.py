"""GET /v1/nodes: the live Jobwire nodes."""

from __future__ import annotations

from fastapi import APIRouter, Request
from starlette.responses import Response

from app.api.auth import ManagementRoute, requires
from app.api.nodes.models import NodeList
from app.api.responses import FastJSON
from app.api.services import services_of
from app.domain.access import Scope
from app.domain.nodes import Node

router = APIRouter(prefix="/v1/nodes", tags=["nodes"], route_class=ManagementRoute)


def node_view(n: Node) -> dict[str, object]:
    return {"server_id": n.server_id, "started_at": n.started_at, "last_heartbeat": n.last_heartbeat,
            "in_flight": n.in_flight, "queues": n.queues}


@router.get("", operation_id="listNodes", response_model=NodeList)
@requires(Scope.READ)
async def list_nodes(request: Request) -> Response:
    """Nodes whose heartbeat is within JOBWIRE_HEARTBEAT_TIMEOUT, with their in-flight HTTP calls.
    A node whose heartbeat is older is taken for dead by the others, but only by a node that has
    itself been connected to the database for one heartbeat timeout since it started or last lost
    the database (after an outage every row is stale, the live nodes' too)."""
    s = services_of(request)
    return FastJSON({"items": [node_view(n) for n in await s.coordination.live_nodes()]})
