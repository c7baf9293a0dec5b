"""Response models of /healthz and /readyz."""

from __future__ import annotations

from app.api.fields import ResponseModel


class Health(ResponseModel):
    status: str
