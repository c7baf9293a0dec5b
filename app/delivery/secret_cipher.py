"""Handler secrets at rest: Fernet (AES-128-CBC + HMAC-SHA256, `cryptography`) under the key of
JOBWIRE_SECRET_KEY. The stored forms are app/domain/handler_secrets.py's.

Decrypting costs a Fernet HMAC and an AES pass (some 10 µs): the dispatch path, which reads every
claimed job's secrets as stored, must not pay it per call, so what `reveal` decrypts is kept in an
LRU keyed by the stored text (a handler's secrets are few, and the same on each claim).
"""

from __future__ import annotations

from functools import lru_cache

from cryptography.fernet import Fernet, InvalidToken

from app.domain.handler_secrets import ENCRYPTED_PREFIX, UnreadableSecret, is_encrypted

DECRYPTED_CACHE_SIZE = 4096


class SecretCipher:
    """seal: a new secret → its stored form (encrypted when a key is set); reveal: a stored form
    → the secret (`whsec_…`), plain ones as they are."""

    def __init__(self, key: str | None = None) -> None:
        """key: a Fernet key (32 bytes, URL-safe base64), or None to store new secrets plain."""
        self._fernet = Fernet(key) if key else None
        self._decrypt = lru_cache(maxsize=DECRYPTED_CACHE_SIZE)(self._decrypt_uncached)

    @property
    def encrypts(self) -> bool:
        return self._fernet is not None

    def seal(self, secret: str) -> str:
        if self._fernet is None:
            return secret
        return ENCRYPTED_PREFIX + self._fernet.encrypt(secret.encode()).decode()

    def reveal(self, stored: str) -> str:
        if not is_encrypted(stored):
            return stored
        return self._decrypt(stored)

    def _decrypt_uncached(self, stored: str) -> str:
        # Failures are not cached (lru_cache keeps only returns): they end each attempt anyway.
        if self._fernet is None:
            raise UnreadableSecret("the handler's signing secret is stored encrypted and JOBWIRE_SECRET_KEY is not "
                                   "set on this node")
        try:
            return self._fernet.decrypt(stored.removeprefix(ENCRYPTED_PREFIX).encode()).decode()
        except (InvalidToken, ValueError) as exc:
            raise UnreadableSecret("the handler's signing secret cannot be decrypted with this node's "
                                   "JOBWIRE_SECRET_KEY (it was encrypted with another key)") from exc


# For callers that hold no key (tests, tools): reads plain secrets, refuses encrypted ones.
PLAIN = SecretCipher()
