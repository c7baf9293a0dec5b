"""Response models of /healthz and /readyz."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from app.api.fields import ResponseModel


class Health(ResponseModel):
    status: Literal["ok", "ready"] = Field(description="`ok` from /healthz, `ready` from /readyz")
