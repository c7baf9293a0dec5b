"""Every secret at rest sealed as this node's JOBWIRE_SECRET_KEY says, at each start-up: the
callback-token server key (job_meta) and the signing secrets of handlers and subscriptions, encrypted under the newest
key when one is set (plain ones, and those an older key of the list encrypted, are sealed again).

A node starts only if it can read every secret at rest: one that cannot (no key, or none of the
keys they were encrypted with) raises UnreadableSecret before it writes anything. The server key
is sealed first and decides: whichever node seals it gives the database its key, and a node
starting at the same time with another key then fails on it and leaves the handler secrets alone.
Every write is guarded on the value read, so any number of nodes starting together seal each
secret once and all end with the same server key.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from app.db.database import Database
from app.db.handlers import HandlerRepository, MetaRepository
from app.db.signing_secrets import HANDLER_SECRETS, SUBSCRIPTION_SECRETS
from app.delivery.secret_cipher import PLAIN, SecretCipher
from app.domain.signing import new_server_key

log = logging.getLogger(__name__)

SERVER_KEY = "callback_server_key"
SIGNING_SECRETS = (HANDLER_SECRETS, SUBSCRIPTION_SECRETS)
SERVER_KEY_NAME = "the callback-token server key (job_meta)"


@dataclass(frozen=True, slots=True)
class SecretsAtRest:
    """What a start-up found and did: the server key, and what this node sealed or emptied."""

    server_key: str = field(repr=False)
    server_key_sealed: bool
    secrets_sealed: int  # signing secrets of handlers and subscriptions
    copies_cleared: int  # first secrets copied into the deprecated job_handlers.secret


async def seal_secrets_at_rest(db: Database, cipher: SecretCipher = PLAIN, meta: MetaRepository | None = None,
                               handlers: HandlerRepository | None = None) -> SecretsAtRest:
    """The start-up's pass over the secrets at rest (see the module's docstring). The server key is
    generated once per database, stored sealed. UnreadableSecret: this node cannot read one."""
    meta = meta or MetaRepository()
    handlers = handlers or HandlerRepository()
    async with db.transaction() as conn:
        stored_key = await meta.get_or_create(conn, SERVER_KEY, cipher.seal(new_server_key()))
        stored = {table: await table.stored(conn) for table in SIGNING_SECRETS}
    server_key = cipher.reveal(stored_key, SERVER_KEY_NAME)
    secrets = {table: [(one, cipher.reveal(one.stored, f"the signing secret {one.id} of {table.kind} {one.owner!r}"))
                       for one in found] for table, found in stored.items()}
    key_sealed = False
    if not cipher.is_current(stored_key):
        server_key, key_sealed = await _seal_server_key(db, meta, cipher, stored_key, server_key)
    sealed = 0
    async with db.transaction() as conn:
        for table, found in secrets.items():
            changes = [(one, cipher.seal(secret)) for one, secret in found if not cipher.is_current(one.stored)]
            sealed += await table.reseal(conn, changes)
        cleared = await handlers.clear_legacy_secrets(conn)
    if key_sealed or sealed:
        log.info("secrets at rest: sealed %s and %d signing secrets as JOBWIRE_SECRET_KEY says",
                 "the callback-token server key" if key_sealed else "no server key", sealed)
    if cleared:
        log.info("secrets at rest: emptied %d copies of first signing secrets in the deprecated column "
                 "job_handlers.secret", cleared)
    return SecretsAtRest(server_key, key_sealed, sealed, cleared)


async def _seal_server_key(db: Database, meta: MetaRepository, cipher: SecretCipher, stored: str,
                           key: str) -> tuple[str, bool]:
    """The server key sealed anew in place of `stored`, unless another node changed it first;
    the key as the database now has it, and whether this call sealed it."""
    async with db.transaction() as conn:
        if await meta.replace(conn, SERVER_KEY, stored, cipher.seal(key)):
            return key, True
        # Another node sealed it since (its write committed while this one waited on the row). A
        # new statement sees its value, readable only if that node's key is one of this node's.
        now = await meta.get(conn, SERVER_KEY)
    if now is None:
        raise RuntimeError("the callback-token server key left job_meta while this node started")
    return cipher.reveal(now, SERVER_KEY_NAME), False
