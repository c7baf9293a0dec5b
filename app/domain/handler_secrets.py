"""Secrets at rest: how one is stored, and the value objects a handler's secrets listing shows.

A stored secret (a handler's signing secret `whsec_…`, the callback-token server key) is its text
(plain: no JOBWIRE_SECRET_KEY was set when it was made) or `jwenc1:<Fernet token of the text>`
(encrypted with JOBWIRE_SECRET_KEY). Both are read; a node started with the key encrypts what is
still plain (app/services/secrets_at_rest.py). The encryption itself is app/delivery/secret_cipher.py.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from uuid import UUID

from app.domain.errors import JobwireError

ENCRYPTED_PREFIX = "jwenc1:"
# Every active secret adds one HMAC to each dispatch and ~50 bytes to its webhook-signature
# header: a rotation needs two, a handler may hold this many (POST …/secrets answers 409 past it).
MAX_ACTIVE_SECRETS = 10


def is_encrypted(stored: str) -> bool:
    return stored.startswith(ENCRYPTED_PREFIX)


class UnreadableSecret(JobwireError):
    """A stored secret this node cannot decrypt: JOBWIRE_SECRET_KEY is unset, or lists no key it
    was encrypted with."""


@dataclass(frozen=True, slots=True)
class HandlerSecret:
    """One of a handler's signing secrets as listed: never its value. expires_at: when it stops
    signing (None: never; set by `expire_others_after_seconds`)."""

    id: UUID
    created_at: datetime
    expires_at: datetime | None = None


@dataclass(frozen=True, slots=True)
class NewHandlerSecret:
    """A secret just added: its value, shown this once."""

    id: UUID
    secret: str
    created_at: datetime


@dataclass(frozen=True, slots=True)
class StoredSecret:
    """A signing secret as it is at rest (whsec_… or jwenc1:…), for the start-up that seals it."""

    id: UUID
    owner: str  # the handler's or subscription's name
    stored: str
