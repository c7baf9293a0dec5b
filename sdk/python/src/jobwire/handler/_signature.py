"""Standard Webhooks verification of a dispatch (and, for `jobwire.events`, of an event delivery):
any of the handler's secrets against any of the request's `v1,` signatures. During a rotation
Jobwire signs with every active secret, and a handler may hold the old and the new one, so either
side can switch first.

Not the `standardwebhooks` package (what the docs show applications that verify by themselves):
its `Webhook.verify` takes one secret per instance, so a rotation would verify the request once
per secret, and it decodes the body as JSON each time, which the toolkit then does again to read
the job. The check is the specification's and small; tests/sdk/test_handler_toolkit.py signs its
requests with the package, so the two agree."""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

SECRET_PREFIX = "whsec_"
# Standard Webhooks' tolerance: a request signed longer ago (or ahead) is a replay or a bad clock.
TOLERANCE_SECONDS = 300


class BadSignature(Exception):
    """Why a request is not a dispatch (or an event delivery) from Jobwire (the text of the 401)."""


def secret_keys(secret: str | Iterable[str], owner: str = "handler") -> tuple[bytes, ...]:
    """The HMAC keys of `whsec_…` secrets, decoded once when the app is built: a typo fails at
    start-up, not as a 401 on every request. `owner` names whose secrets they are (a handler's,
    a subscription's), in the messages."""
    secrets = [secret] if isinstance(secret, str) else list(secret)
    if not secrets:
        raise ValueError(f"give at least one {owner} secret (whsec_…)")
    keys = []
    for value in secrets:
        if not isinstance(value, str) or not value.startswith(SECRET_PREFIX):
            raise ValueError(f"a {owner} secret is a 'whsec_…' string (PUT /v1/{owner}s/{{name}} answers it)")
        try:
            # Padding added as the standardwebhooks package does: extra '=' are ignored.
            key = base64.b64decode(value.removeprefix(SECRET_PREFIX) + "==")
        except binascii.Error as exc:
            raise ValueError(f"a {owner} secret is 'whsec_' and base64") from exc
        if not key:
            raise ValueError(f"a {owner} secret may not be empty")
        keys.append(key)
    return tuple(keys)


@dataclass(frozen=True, slots=True)
class Signed:
    """A verified request: when it was signed, and the SHA-256 of what was signed (the same for
    every copy of one message, whichever of its signatures verifies)."""

    timestamp: int
    digest: bytes


def verify(keys: tuple[bytes, ...], headers: Mapping[str, str], body: bytes, now: float,
           owner: str = "handler") -> Signed:
    """Raises BadSignature unless one signature in `webhook-signature` is the HMAC-SHA256 of
    `<webhook-id>.<webhook-timestamp>.<body>` under one of `keys`, signed within the tolerance
    of `now`. `headers` has lower-case names; `body` is the raw bytes, as signed."""
    msg_id = headers.get("webhook-id")
    timestamp = headers.get("webhook-timestamp")
    signatures = headers.get("webhook-signature")
    if not (msg_id and timestamp and signatures):
        raise BadSignature("missing webhook-id, webhook-timestamp or webhook-signature")
    if not (timestamp.isascii() and timestamp.isdigit()) or len(timestamp) > 12:
        raise BadSignature("webhook-timestamp is not unix seconds")
    if abs(now - int(timestamp)) > TOLERANCE_SECONDS:
        raise BadSignature(f"webhook-timestamp is more than {TOLERANCE_SECONDS} seconds from now")
    signed = f"{msg_id}.{timestamp}.".encode() + body
    expected = [hmac.digest(key, signed, hashlib.sha256) for key in keys]
    for candidate in signatures.split():
        version, _, encoded = candidate.partition(",")
        if version != "v1":
            continue  # a scheme this toolkit does not know; another signature may still match
        try:
            given = base64.b64decode(encoded, validate=True)
        except binascii.Error:
            continue
        if any(hmac.compare_digest(given, mac) for mac in expected):
            return Signed(int(timestamp), hashlib.sha256(signed).digest())
    raise BadSignature(f"no signature matches the {owner}'s secrets")
