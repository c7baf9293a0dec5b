"""Nodes: the live Jobwire nodes (as GET /v1/nodes shows them), their start, last heartbeat, calls
in flight and the queues they claim from."""

from __future__ import annotations

from fastapi import APIRouter
from starlette.requests import Request
from starlette.responses import Response

from app.ui.access import viewer
from app.ui.context import ui_of
from app.ui.render import render

router = APIRouter()


@router.get("/ui/nodes")
async def nodes(request: Request) -> Response:
    who = await viewer(request)  # nodes belong to no queue: every key that reads sees them
    live = await ui_of(request).coordination.live_nodes()
    return render(request, who, "nodes.html", nodes=live, this_node=getattr(request.app.state, "node_id", None))
