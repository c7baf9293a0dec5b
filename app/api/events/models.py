"""Response models of /v1/events."""

from __future__ import annotations

from pydantic import Field

from app.api.executions.models import EventOut
from app.api.fields import ResponseModel


class FeedPage(ResponseModel):
    items: list[EventOut]
    next_cursor: str = Field(description="where the next page starts; never null: at the end, where to ask again")
