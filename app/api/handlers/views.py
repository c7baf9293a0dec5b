"""Handler → the JSON shape of HandlerOut; a new secret → SecretCreated."""

from __future__ import annotations

from typing import Any

from app.domain.handlers import Handler
from app.domain.keys import KeyStatus
from app.domain.handler_secrets import NewHandlerSecret


def handler_view(h: Handler, *, with_secret: bool = False) -> dict[str, Any]:
    view: dict[str, Any] = {
        "name": h.name,
        "url": h.url,
        "timeout_seconds": h.timeout_seconds,
        "max_concurrency": h.max_concurrency,
        "stateful": h.stateful,
        "key_concurrency": h.key_concurrency,
        "rate_limit": h.rate_limit and h.rate_limit.document(),
        "key_rate_limit": h.key_rate_limit and h.key_rate_limit.document(),
        "circuit": {"state": h.circuit.state.value, "until": h.circuit.until, "failures": h.circuit.failures},
        "adaptive": None if not h.adaptive else {"limit": h.adaptive_limit, "since": h.adaptive_since},
        "batch": h.batch and h.batch.document(),
        "created_at": h.created_at,
        "updated_at": h.updated_at,
        "secrets": [{"id": str(s.id), "created_at": s.created_at, "expires_at": s.expires_at} for s in h.secrets],
    }
    if with_secret:
        view["secret"] = h.secret
    return view


def key_view(k: KeyStatus) -> dict[str, Any]:
    return {"key": k.key, "waiting": k.waiting, "in_flight": k.in_flight,
            "rate": {"count": k.rate_count, "window_start": k.rate_window_start, "next_slot": k.rate_next_slot},
            "paused": k.paused, "retry_after": k.retry_after}


def new_secret_view(s: NewHandlerSecret) -> dict[str, Any]:
    return {"id": str(s.id), "secret": s.secret, "created_at": s.created_at}
