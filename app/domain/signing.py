"""Webhook signatures (Standard Webhooks) and callback tokens. Pure HMAC, no I/O."""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
from collections.abc import Iterable
from functools import lru_cache

SECRET_PREFIX = "whsec_"


def new_handler_secret() -> str:
    return SECRET_PREFIX + base64.b64encode(secrets.token_bytes(32)).decode()


def new_server_key() -> str:
    return base64.urlsafe_b64encode(secrets.token_bytes(32)).decode().rstrip("=")


@lru_cache(maxsize=4096)
def _secret_key(secret: str) -> bytes:
    # Cached: every dispatch signs with its handler's secrets, the same few strings each time.
    return base64.b64decode(secret.removeprefix(SECRET_PREFIX))


def webhook_id(execution_id: object, resumption: int | None = None) -> str:
    """The execution id, the same on every attempt (handlers dedupe on it); the attempt travels
    in the `jobwire-attempt` header and the body. A resumed dispatch is a new message:
    `<execution id>.r<n>` (DESIGN §9)."""
    return str(execution_id) if resumption is None else f"{execution_id}.r{resumption}"


def sign_webhook(signing_secrets: str | Iterable[str], msg_id: str, timestamp: int, body: bytes) -> str:
    """The `webhook-signature` header value: `v1,<base64 HMAC-SHA256(key, id.ts.body)>` for one
    secret (`whsec_…`), or one such per secret, space-separated (the specification's form for
    several keys: a handler verifies with any one of them)."""
    signed = msg_id.encode() + b"." + str(timestamp).encode() + b"." + body
    if isinstance(signing_secrets, str):
        signing_secrets = (signing_secrets,)
    return " ".join(["v1," + base64.b64encode(hmac.digest(_secret_key(s), signed, "sha256")).decode()
                     for s in signing_secrets])


def _token_mac(server_key: str, execution_id: object, attempt: int) -> str:
    mac = hmac.new(server_key.encode(), f"{execution_id}.{attempt}".encode(), hashlib.sha256).digest()
    return base64.urlsafe_b64encode(mac).decode().rstrip("=")


def callback_token(server_key: str, execution_id: object, attempt: int) -> str:
    """`<attempt>.<base64url HMAC-SHA256(server key, "<execution id>.<attempt>")>`."""
    return f"{attempt}.{_token_mac(server_key, execution_id, attempt)}"


def verify_callback_token(server_key: str, execution_id: object, token: str) -> int | None:
    """The attempt the token was minted for, or None when it is not a token for this execution."""
    attempt_text, sep, mac = token.partition(".")
    if not sep or not (attempt_text.isascii() and attempt_text.isdigit()) or len(attempt_text) > 9:
        return None
    if not mac.isascii():  # a MAC is base64url; anything else (a lone surrogate) cannot even be encoded
        return None
    attempt = int(attempt_text)
    if not hmac.compare_digest(mac.encode(), _token_mac(server_key, execution_id, attempt).encode()):
        return None
    return attempt
