"""Opaque cursors: a JSON document, base64url without padding. Each listing says what its
cursor holds and checks it when it comes back (decode() only undoes the encoding)."""

from __future__ import annotations

import base64
from typing import Any

import orjson


def encode(document: Any) -> str:
    return base64.urlsafe_b64encode(orjson.dumps(document)).decode().rstrip("=")


def decode(cursor: str) -> Any:
    """The document encode() made; ValueError (binascii.Error, orjson.JSONDecodeError) for text it
    did not make."""
    return orjson.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
