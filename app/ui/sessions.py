"""Signed values for the dashboard's cookies: `payload.mac`, both base64url, the MAC an
HMAC-SHA256 under a key derived from the server key every node shares (so any node behind a load
balancer accepts a cookie another signed), with an expiry inside the signed payload.

Each use signs under a key of its own (`derive(server_key, purpose)`): a session cookie is not a
flash cookie, and neither is a CSRF token."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
from typing import Any


def derive(server_key: str, purpose: str) -> bytes:
    """The key for one purpose ("session", "csrf", "flash"), derived from the server key."""
    return hmac.new(server_key.encode(), f"jobwire-ui:{purpose}".encode(), hashlib.sha256).digest()


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def mac(key: bytes, message: str) -> str:
    return _b64(hmac.new(key, message.encode(), hashlib.sha256).digest())


def sign(key: bytes, payload: dict[str, Any], *, now: float, lifetime: float) -> str:
    """`payload` with its expiry (`exp`, seconds since the epoch), signed."""
    body = _b64(json.dumps({**payload, "exp": int(now + lifetime)}, separators=(",", ":")).encode())
    return f"{body}.{mac(key, body)}"


def verify(key: bytes, token: str | None, *, now: float) -> dict[str, Any] | None:
    """The payload of a value sign() made under `key` that has not expired; None for anything else
    (unsigned, signed under another key, tampered with, expired, not even the right shape)."""
    if not token or token.count(".") != 1:
        return None
    body, given = token.split(".")
    if not hmac.compare_digest(given.encode(), mac(key, body).encode()):
        return None
    try:
        payload = json.loads(_unb64(body))
    except ValueError:
        return None
    if not isinstance(payload, dict) or not isinstance(payload.get("exp"), int) or payload["exp"] <= now:
        return None
    return payload
