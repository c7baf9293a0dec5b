"""Request and response models of /v1/handlers."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

from pydantic import Field, Strict, StringConstraints

from app.api.fields import ResponseModel, Seconds, StrictModel


class HandlerIn(StrictModel):
    url: Annotated[str, Strict(), StringConstraints(pattern=r"^https?://[^\s]+$", max_length=2048)]
    timeout_seconds: Seconds | None = None
    max_concurrency: Annotated[int, Strict(), Field(ge=1, le=1_000_000)] | None = None
    stateful: Annotated[bool, Strict()] = False


class HandlerOut(ResponseModel):
    name: str
    url: str
    timeout_seconds: float | None
    max_concurrency: int | None
    stateful: bool
    created_at: datetime
    updated_at: datetime
    secret: str | None = Field(
        None, description="Signing secret (whsec_…), in the response that created the handler only.")


class HandlerList(ResponseModel):
    items: list[HandlerOut]
