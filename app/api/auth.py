"""Bearer API keys for management routes (open when none are configured)."""

from __future__ import annotations

import hmac

from fastapi import Request

from app.domain.errors import Unauthenticated


def bearer_token(request: Request) -> str | None:
    return bearer_from(request.headers.get("authorization"))


def bearer_from(header: str | None) -> str | None:
    """The token of an `Authorization: Bearer <token>` header value."""
    if not header:
        return None
    scheme, _, token = header.partition(" ")
    return token.strip() if scheme.lower() == "bearer" and token.strip() else None


def check_api_key(request: Request) -> None:
    """The check of every management route (ManagementRoute, app/api/body.py), before its body is read."""
    check_key(request.app.state.api_keys, request.headers.get("authorization"))


def check_key(keys: tuple[bytes, ...], authorization: str | None) -> None:
    """Raises Unauthenticated unless keys are open (none configured) or the header holds one."""
    if not keys:
        return
    token = bearer_from(authorization)
    if token is None:
        raise Unauthenticated("an API key is required: Authorization: Bearer <key>")
    # surrogatepass: a str that is no header value (a lone surrogate) is a wrong key, not a crash.
    given = token.encode("utf-8", "surrogatepass")
    if not any(hmac.compare_digest(given, key) for key in keys):
        raise Unauthenticated("the API key is not valid")
