"""Secrets at rest (handlers' signing secrets, the callback-token server key): Fernet (AES-128-CBC +
HMAC-SHA256, `cryptography`) under the keys of JOBWIRE_SECRET_KEY. The stored forms are
app/domain/handler_secrets.py's.

JOBWIRE_SECRET_KEY may list several keys, newest first (MultiFernet): the first seals, every one
reads. A start-up seals again what an older key of the list sealed (app/services/secrets_at_rest.py);
docs/guides/security.md ("Rotate JOBWIRE_SECRET_KEY") says in which order the nodes get the new list.

Decrypting costs a Fernet HMAC and an AES pass: the dispatch path, which reads every
claimed job's secrets as stored, must not pay it per call, so what `reveal` decrypts is kept in an
LRU keyed by the stored text (a handler's secrets are few, and the same on each claim).
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache

from cryptography.fernet import Fernet, InvalidToken, MultiFernet

from app.domain.handler_secrets import ENCRYPTED_PREFIX, UnreadableSecret, is_encrypted

DECRYPTED_CACHE_SIZE = 4096
HANDLER_SECRET = "the handler's signing secret"


class _Unreadable(Exception):
    """Why a stored text cannot be read (a message to follow the name of what it is)."""


class SecretCipher:
    """seal: a new secret → its stored form (encrypted when a key is set); reveal: a stored form
    → the secret, plain ones as they are; is_current: whether a stored form is what seal makes now."""

    def __init__(self, keys: str | Sequence[str] | None = None) -> None:
        """keys: Fernet keys (32 bytes, URL-safe base64), newest first, as a sequence or as
        JOBWIRE_SECRET_KEY holds them (comma-separated); none to store new secrets plain."""
        if isinstance(keys, str):
            keys = [k.strip() for k in keys.split(",") if k.strip()]
        fernets = [Fernet(k) for k in keys or ()]
        self._newest = fernets[0] if fernets else None
        self._fernet = MultiFernet(fernets) if fernets else None
        self._decrypt = lru_cache(maxsize=DECRYPTED_CACHE_SIZE)(self._decrypt_uncached)

    @property
    def encrypts(self) -> bool:
        return self._fernet is not None

    def seal(self, secret: str) -> str:
        if self._fernet is None:
            return secret
        return ENCRYPTED_PREFIX + self._fernet.encrypt(secret.encode()).decode()

    def reveal(self, stored: str, what: str = HANDLER_SECRET) -> str:
        """The secret; UnreadableSecret naming `what` when this node's keys cannot decrypt it."""
        if not is_encrypted(stored):
            return stored
        try:
            return self._decrypt(stored)
        except _Unreadable as exc:
            raise UnreadableSecret(f"{what} {exc}") from None

    def is_current(self, stored: str) -> bool:
        """Whether `stored` is sealed as this cipher seals: plain without a key, else encrypted
        under the newest key. One that is not is sealed again at start-up."""
        if not is_encrypted(stored):
            return self._newest is None
        if self._newest is None:
            return False
        try:
            self._newest.decrypt(stored.removeprefix(ENCRYPTED_PREFIX).encode())
        except (InvalidToken, ValueError):
            return False
        return True

    def _decrypt_uncached(self, stored: str) -> str:
        # Failures are not cached (lru_cache keeps only returns): they end each attempt anyway.
        if self._fernet is None:
            raise _Unreadable("is stored encrypted and JOBWIRE_SECRET_KEY is not set on this node")
        try:
            return self._fernet.decrypt(stored.removeprefix(ENCRYPTED_PREFIX).encode()).decode()
        except (InvalidToken, ValueError) as exc:
            raise _Unreadable("cannot be decrypted with this node's JOBWIRE_SECRET_KEY (it was encrypted with "
                              "another key)") from exc


# For callers that hold no key (tests, tools): reads plain secrets, refuses encrypted ones.
PLAIN = SecretCipher()
