"""Bearer API keys for management routes (open when none are configured)."""

from __future__ import annotations

import hmac

from fastapi import Request

from app.domain.errors import Unauthenticated


def bearer_token(request: Request) -> str | None:
    header = request.headers.get("authorization")
    if not header:
        return None
    scheme, _, token = header.partition(" ")
    return token.strip() if scheme.lower() == "bearer" and token.strip() else None


async def require_api_key(request: Request) -> None:
    """The dependency of management routes. async, as every dependency here: FastAPI runs a
    plain-def dependency on a worker thread, a thread hop per request."""
    check_api_key(request)


def check_api_key(request: Request) -> None:
    keys: tuple[bytes, ...] = request.app.state.api_keys
    if not keys:
        return
    token = bearer_token(request)
    if token is None:
        raise Unauthenticated("an API key is required: Authorization: Bearer <key>")
    given = token.encode()
    if not any(hmac.compare_digest(given, key) for key in keys):
        raise Unauthenticated("the API key is not valid")
