"""Response models of /v1/nodes."""

from __future__ import annotations

from datetime import datetime

from pydantic import Field

from app.api.fields import ResponseModel


class NodeOut(ResponseModel):
    server_id: str
    started_at: datetime
    last_heartbeat: datetime
    in_flight: int
    queues: list[str] | None = Field(description="the queues it claims from (JOBWIRE_QUEUES); null: every queue")


class NodeList(ResponseModel):
    items: list[NodeOut]
