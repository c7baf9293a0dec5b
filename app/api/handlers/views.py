"""Handler → the JSON shape of HandlerOut."""

from __future__ import annotations

from typing import Any

from app.domain.executions import Handler


def handler_view(h: Handler, *, with_secret: bool = False) -> dict[str, Any]:
    view: dict[str, Any] = {
        "name": h.name,
        "url": h.url,
        "timeout_seconds": h.timeout_seconds,
        "max_concurrency": h.max_concurrency,
        "stateful": h.stateful,
        "created_at": h.created_at,
        "updated_at": h.updated_at,
    }
    if with_secret:
        view["secret"] = h.secret
    return view
