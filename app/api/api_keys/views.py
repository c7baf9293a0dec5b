"""ApiKey → the JSON shape of ApiKeyOut (ApiKeyCreated adds the key)."""

from __future__ import annotations

from typing import Any

from app.domain.access import ApiKey


def api_key_view(k: ApiKey, *, secret: str | None = None) -> dict[str, Any]:
    view: dict[str, Any] = {
        "id": str(k.id),
        "name": k.name,
        "scopes": [s.value for s in k.scopes],
        "queues": None if k.queues is None else list(k.queues),
        "created_at": k.created_at,
    }
    if secret is not None:
        view["key"] = secret
    return view
