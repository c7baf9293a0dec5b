"""Rotating signing secrets, the same for a handler and an event subscription: add one (every
active secret signs, so a receiver verifies with either while it moves over), retire one, never
the last that does not expire."""

from __future__ import annotations

from uuid import UUID

from app.db.database import Database
from app.db.signing_secrets import SigningSecrets
from app.delivery.secret_cipher import SecretCipher
from app.domain.errors import Conflict, NotFound
from app.domain.handler_secrets import MAX_ACTIVE_SECRETS, NewHandlerSecret
from app.domain.signing import new_handler_secret


class SecretRotation:
    def __init__(self, db: Database, secrets: SigningSecrets, cipher: SecretCipher, collection: str) -> None:
        """collection: the owners' path under /v1 (`handlers`, `subscriptions`), for messages."""
        self.db = db
        self.secrets = secrets
        self.cipher = cipher
        self.kind = secrets.kind
        self.collection = collection

    async def add(self, name: str, expire_others_after: float | None = None) -> NewHandlerSecret:
        """A new signing secret: from now on every request is signed with it too, beside the
        owner's other active secrets, until they are deleted or expire (after
        `expire_others_after` seconds, when given). Its value is returned this once."""
        secret = new_handler_secret()
        stored = self.cipher.seal(secret)
        async with self.db.transaction() as conn:
            if not await self.secrets.lock(conn, name):
                raise NotFound(self.kind, name)
            active = (await self.secrets.of(conn, [name])).get(name, ())
            if len(active) >= MAX_ACTIVE_SECRETS:
                raise Conflict(f"{self.kind} {name!r} has {len(active)} active secrets, the most it may hold: "
                               "delete one before adding another")
            added = await self.secrets.add(conn, name, stored, expire_others_after)
        return NewHandlerSecret(id=added.id, secret=secret, created_at=added.created_at)

    async def delete(self, name: str, secret_id: UUID) -> None:
        """Retire one secret at once. Refused (Conflict) for the owner's last secret without an
        expiry, which would leave it none to sign with: the guard holds under concurrent deletes,
        since each runs with the owner's row locked."""
        async with self.db.transaction() as conn:
            if not await self.secrets.lock(conn, name):
                raise NotFound(self.kind, name)
            found, deleted = await self.secrets.delete(conn, name, secret_id)
        if not found:
            raise NotFound("secret", f"{secret_id} of {self.kind} {name!r}")
        if not deleted:
            raise Conflict(f"secret {secret_id} is the last secret of {self.kind} {name!r} that does not expire: "
                           f"add another (POST /v1/{self.collection}/{name}/secrets) before deleting it")
