"""Handler → the JSON shape of HandlerOut; a new secret → SecretCreated."""

from __future__ import annotations

from typing import Any

from app.domain.handlers import Handler
from app.domain.handler_secrets import NewHandlerSecret


def handler_view(h: Handler, *, with_secret: bool = False) -> dict[str, Any]:
    view: dict[str, Any] = {
        "name": h.name,
        "url": h.url,
        "timeout_seconds": h.timeout_seconds,
        "max_concurrency": h.max_concurrency,
        "stateful": h.stateful,
        "created_at": h.created_at,
        "updated_at": h.updated_at,
        "secrets": [{"id": str(s.id), "created_at": s.created_at, "expires_at": s.expires_at} for s in h.secrets],
    }
    if with_secret:
        view["secret"] = h.secret
    return view


def new_secret_view(s: NewHandlerSecret) -> dict[str, Any]:
    return {"id": str(s.id), "secret": s.secret, "created_at": s.created_at}
