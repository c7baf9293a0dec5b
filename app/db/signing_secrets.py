"""SigningSecrets: the signing secrets of handlers (job_handler_secrets) and of event subscriptions
(job_subscription_secrets), one repository over either table (app/db/sql/signing_secrets.sql)."""

from __future__ import annotations

from collections.abc import Sequence
from uuid import UUID

from app.db.database import Connection
from app.db.queries import load
from app.db.rows import handler_secret_from
from app.db.statements import Statement, fetch, fetchrow
from app.domain.handler_secrets import HandlerSecret, StoredSecret


class SigningSecrets:
    def __init__(self, secrets: str, owner: str, owners: str) -> None:
        """secrets: the table; owner: its column naming the owner; owners: the owners' table."""
        self.kind = owner
        self.q: dict[str, Statement] = load("signing_secrets.sql", secrets=secrets, owner=owner, owners=owners)

    async def of(self, conn: Connection, names: Sequence[str]) -> dict[str, tuple[HandlerSecret, ...]]:
        """name → its secrets that still sign, newest first (never their values)."""
        found: dict[str, list[HandlerSecret]] = {}
        for r in await fetch(conn, self.q["secrets_list"], names=list(names)):
            found.setdefault(r["owner"], []).append(handler_secret_from(r))
        return {name: tuple(items) for name, items in found.items()}

    async def signing(self, conn: Connection, names: Sequence[str]) -> dict[str, list[str]]:
        """name → its secrets that still sign, as stored (whsec_… or jwenc1:…), newest first."""
        found: dict[str, list[str]] = {}
        for r in await fetch(conn, self.q["secrets_signing"], names=list(names)):
            found.setdefault(r["owner"], []).append(r["secret"])
        return found

    async def lock(self, conn: Connection, name: str) -> bool:
        """Hold the owner's row until commit (one rotation at a time); False when there is none."""
        return await fetchrow(conn, self.q["lock_for_secrets"], name=name) is not None

    async def add(self, conn: Connection, name: str, stored: str, expire_others_after: float | None) -> HandlerSecret:
        """Run after lock: a new secret (as stored); the others expire after `expire_others_after`
        seconds when given."""
        row = await fetchrow(conn, self.q["secret_add"], name=name, secret=stored,
                             expire_after=None if expire_others_after is None else float(expire_others_after))
        assert row is not None
        return handler_secret_from(row)

    async def delete(self, conn: Connection, name: str, secret_id: UUID) -> tuple[bool, bool]:
        """Run after lock: (found, deleted); found and not deleted means it is the owner's last
        secret without an expiry."""
        row = await fetchrow(conn, self.q["secret_delete"], name=name, id=secret_id)
        assert row is not None
        return bool(row["found"]), bool(row["deleted"])

    async def stored(self, conn: Connection) -> list[StoredSecret]:
        """Every signing secret as stored (whsec_… or jwenc1:…), expired ones included."""
        rows = await fetch(conn, self.q["secrets_stored"])
        return [StoredSecret(r["id"], r["owner"], r["secret"]) for r in rows]

    async def reseal(self, conn: Connection, changes: Sequence[tuple[StoredSecret, str]]) -> int:
        """Store each secret in its new form where it is still as read; how many this call changed."""
        if not changes:
            return 0
        rows = await fetch(conn, self.q["secrets_reseal"], ids=[old.id for old, _ in changes],
                           stored=[old.stored for old, _ in changes], sealed=[new for _, new in changes])
        return len(rows)


HANDLER_SECRETS = SigningSecrets("job_handler_secrets", "handler", "job_handlers")
SUBSCRIPTION_SECRETS = SigningSecrets("job_subscription_secrets", "subscription", "job_subscriptions")
