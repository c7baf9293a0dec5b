"""API keys kept in the database (POST/GET/DELETE /v1/api-keys) and the lookups behind every
management request: which key a bearer token is, and whether the API is open.

A key is `jw_` + 32 random bytes (base64url), shown once, when it is created; the database keeps
its SHA-256 hash only, and a request's key is found by its hash (the unique index), never by
comparing secrets. Bootstrap keys (JOBWIRE_API_KEYS) are compared by app/api/auth.py and never
reach the database.

What a node learns from the database it keeps for `cache_seconds` (2 s), so a request costs no
database round trip once its key was seen (the single-job enqueue path included): a key's scopes
and queues, and whether any key exists at all (the API is open only while none does and no
bootstrap key is configured). Hence the bounds every node keeps: a deleted key stops working
within `cache_seconds` of the delete's commit (plus the time one lookup takes), on the node that
deleted it at once; the first key created closes the API within `cache_seconds`, on the node that
created it at once. Unknown keys are not cached (they are looked up each time), so a key works on
every node as soon as it is created.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import secrets
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import TypeVar
from uuid import UUID

from app.db.api_keys import ApiKeyRepository
from app.db.database import Database
from app.domain.access import ApiKey, Principal, Scope
from app.domain.errors import Conflict, FieldError, NotFound, ValidationFailed

KEY_PREFIX = "jw_"
CACHE_SECONDS = 2.0  # at most this long a node acts on what it read of job_api_keys
MAX_CACHED = 10_000  # keys a node remembers at once (past it, the cache starts over)

T = TypeVar("T")

# Why the last key, or the last admin key, is kept while no bootstrap key is configured.
_KEPT = {
    "last": "this is the last API key and JOBWIRE_API_KEYS is not set: deleting it would open the API to anyone; "
            "create another key first (or configure a bootstrap key)",
    "last_admin": "this is the last API key with scope admin and JOBWIRE_API_KEYS is not set: deleting it would "
                  "leave no key that can manage keys, handlers and schedules; create another admin key first (or "
                  "configure a bootstrap key)",
}


def new_key() -> str:
    """A fresh API key: `jw_` + 32 random bytes, base64url without padding (46 characters)."""
    return KEY_PREFIX + base64.urlsafe_b64encode(secrets.token_bytes(32)).decode().rstrip("=")


def key_hash(key: str) -> str:
    """What the database stores of a key: its SHA-256, hex. (surrogatepass: any str a header
    decodes to hashes, a lone surrogate included; it just matches no key.)"""
    return hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()


@dataclass(frozen=True, slots=True)
class CreatedKey:
    key: ApiKey
    secret: str  # the key itself (`jw_…`): in the creating response only, never stored


class ApiKeyService:
    def __init__(self, db: Database, *, bootstrap: bool, repository: ApiKeyRepository | None = None,
                 cache_seconds: float = CACHE_SECONDS, clock: Callable[[], float] = time.monotonic) -> None:
        """`bootstrap`: keys are configured in JOBWIRE_API_KEYS (the API is never open, and the
        last database key, admin or not, may be deleted)."""
        self.db = db
        self.bootstrap = bootstrap
        self.repository = repository or ApiKeyRepository()
        self.cache_seconds = cache_seconds
        self.clock = clock
        # hash → (principal, valid until); "open" → (bool, valid until). Each lookup runs once at a
        # time per entry (concurrent requests share it), and stores its answer only if no write of
        # this node invalidated the cache meanwhile (the generation).
        self._principals: dict[str, tuple[Principal, float]] = {}
        self._open: tuple[bool, float] | None = None
        self._loading: dict[str, asyncio.Future[object]] = {}
        self._generation = 0

    # --- the management API ---------------------------------------------------------------

    async def create(self, name: str, scopes: Sequence[Scope], queues: Sequence[str] | None) -> CreatedKey:
        """A new key with these scopes (at least one) and, optionally, limited to `queues`. An
        admin key cannot be limited to queues: it could create a key that is not."""
        scopes = tuple(s for s in Scope if s in set(scopes))
        if not scopes:
            raise ValidationFailed([FieldError("scopes", "give at least one scope")])
        if queues is not None:
            if not queues:
                raise ValidationFailed([FieldError("queues", "give at least one queue, or leave queues out (every "
                                                             "queue)")])
            if Scope.ADMIN in scopes:
                raise ValidationFailed([FieldError("queues", "an admin key cannot be limited to queues (it could "
                                                             "create a key that is not)")])
            queues = sorted(set(queues))
        secret = new_key()
        async with self.db.transaction() as conn:
            key = await self.repository.insert(conn, name=name, key_hash=key_hash(secret), scopes=scopes,
                                               queues=queues)
        self._invalidate()  # this node's API is closed from now on
        return CreatedKey(key, secret)

    async def list(self) -> list[ApiKey]:
        async with self.db.transaction() as conn:
            return await self.repository.list(conn)

    async def delete(self, key_id: UUID) -> None:
        """NotFound when there is no such key; Conflict, unless a bootstrap key is configured, when
        it is the last key (deleting it would open the API) or the last one with scope admin (no
        key could manage keys, handlers or schedules any more). Two deletes take turns (a lock),
        so no two deletes remove the last two such keys at once."""
        async with self.db.transaction() as conn:
            await self.repository.lock_for_delete(conn)
            if not await self.repository.delete(conn, key_id, keep_last=not self.bootstrap):
                kept = await self.repository.kept_because(conn, key_id)
                if kept is None:
                    raise NotFound("API key", key_id)
                raise Conflict(_KEPT[kept])
        self._invalidate()  # refused on this node at once; on the others within cache_seconds

    # --- authentication -------------------------------------------------------------------

    async def principal_for(self, token: str) -> Principal | None:
        """The database key `token` is (cached), or None."""
        if not token.startswith(KEY_PREFIX):
            return None
        digest = key_hash(token)
        cached = self._principals.get(digest)
        if cached is not None and cached[1] > self.clock():
            return cached[0]
        return await self._load(digest, lambda: self._lookup(digest))

    async def principal_by_id(self, key_id: UUID) -> Principal | None:
        """The database key `key_id` is, read now (not cached: a dashboard session, app/ui, ends
        with its key's delete); None when it no longer exists."""
        async with self.db.autocommit() as conn:
            key = await self.repository.by_id(conn, key_id)
        return None if key is None else key.principal()

    async def is_open(self) -> bool:
        """No key exists at all: none configured, none in the database (cached)."""
        if self.bootstrap:
            return False
        cached = self._open
        if cached is not None and cached[1] > self.clock():
            return cached[0]
        return await self._load("", self._lookup_open)

    async def _lookup(self, digest: str) -> Principal | None:
        started, generation = self.clock(), self._generation
        async with self.db.autocommit() as conn:
            key = await self.repository.by_hash(conn, digest)
        if key is None:
            return None
        principal = key.principal()
        if generation == self._generation:
            if len(self._principals) >= MAX_CACHED:
                now = self.clock()
                self._principals = {h: e for h, e in self._principals.items() if e[1] > now}
                if len(self._principals) >= MAX_CACHED:
                    self._principals.clear()
            # Valid from when the lookup began: a delete that committed after it is seen in time.
            self._principals[digest] = (principal, started + self.cache_seconds)
        return principal

    async def _lookup_open(self) -> bool:
        started, generation = self.clock(), self._generation
        async with self.db.autocommit() as conn:
            open_ = not await self.repository.any_exist(conn)
        if generation == self._generation:
            self._open = (open_, started + self.cache_seconds)
        return open_

    async def _load(self, slot: str, lookup: Callable[[], Awaitable[T]]) -> T:
        """One lookup per slot at a time: requests that find the same entry stale share it (a
        cancelled request does not cancel it for the others)."""
        future = self._loading.get(slot)
        if future is None:
            future = asyncio.ensure_future(lookup())
            self._loading[slot] = future
            future.add_done_callback(lambda done: self._settled(slot, done))
        return await asyncio.shield(future)  # type: ignore[return-value]

    def _settled(self, slot: str, done: asyncio.Future[object]) -> None:
        if self._loading.get(slot) is done:
            del self._loading[slot]
        if not done.cancelled():
            done.exception()  # retrieved: a failure every waiter left is not logged as unretrieved

    def _invalidate(self) -> None:
        self._generation += 1
        self._principals.clear()
        self._open = None
