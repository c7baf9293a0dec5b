"""Handler registration: upsert (secret minted once), show, list, delete when unused; signing
secrets added and retired (rotation without downtime)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from urllib.parse import urlsplit
from uuid import UUID

from app.db.database import Database
from app.db.handlers import HandlerRepository
from app.domain.errors import Conflict, FieldError, NotFound, ValidationFailed
from app.domain.handlers import Handler, RateLimit
from app.domain.handler_secrets import MAX_ACTIVE_SECRETS, NewHandlerSecret
from app.domain.address_policy import ANY_NETWORK, NetworkPolicy
from app.domain.addresses import as_address
from app.domain.handler_urls import handler_url_problem
from app.domain.signing import new_handler_secret
from app.delivery.secret_cipher import PLAIN, SecretCipher


@dataclass(frozen=True, slots=True)
class HandlerSpec:
    url: str
    timeout_seconds: float | None = None
    max_concurrency: int | None = None
    stateful: bool = False
    key_concurrency: int | None = None
    rate_limit: RateLimit | None = None
    key_rate_limit: RateLimit | None = None
    adaptive: bool = False


class HandlerService:
    def __init__(self, db: Database, handlers: HandlerRepository | None = None, cipher: SecretCipher = PLAIN,
                 networks: NetworkPolicy = ANY_NETWORK) -> None:
        """cipher: how new secrets are stored (encrypted under JOBWIRE_SECRET_KEY when it is set);
        networks: JOBWIRE_HANDLER_NETWORKS, which a URL's IP literal must satisfy."""
        self.networks = networks
        self.db = db
        self.handlers = handlers or HandlerRepository()
        self.cipher = cipher

    async def put(self, name: str, spec: HandlerSpec) -> tuple[Handler, bool]:
        """The handler and whether it was created; a created one carries its first signing
        secret in plain text (`secret`), shown in this response only."""
        self._check_url(spec.url)
        if spec.stateful:
            keyed = [FieldError(f, "a stateful handler's jobs run one at a time in their queue and take no "
                                   "concurrency key") for f in ("key_concurrency", "key_rate_limit")
                     if getattr(spec, f) is not None]
            if keyed:
                raise ValidationFailed(keyed)
        if spec.adaptive and spec.max_concurrency is None:
            raise ValidationFailed([FieldError("adaptive", "needs max_concurrency: the limit it grows to")])
        secret = new_handler_secret()
        async with self.db.transaction() as conn:
            handler, created = await self.handlers.upsert(
                conn,
                name=name,
                url=spec.url,
                timeout_seconds=spec.timeout_seconds,
                max_concurrency=spec.max_concurrency,
                stateful=spec.stateful,
                new_secret=self.cipher.seal(secret),
                key_concurrency=spec.key_concurrency,
                rate_limit=spec.rate_limit,
                key_rate_limit=spec.key_rate_limit,
                adaptive=spec.adaptive,
            )
        return (replace(handler, secret=secret) if created else handler), created

    def _check_url(self, url: str) -> None:
        """ValidationFailed naming `url` for a URL that cannot be delivered to, or whose host is an
        IP address JOBWIRE_HANDLER_NETWORKS refuses. A host name is not resolved here: its answer
        may change, and the dispatch clients judge the address they connect to at every call."""
        problem = handler_url_problem(url)
        if problem is None:
            host = urlsplit(url).hostname or ""
            refusal = self.networks.refusal(host) if as_address(host) is not None else None
            problem = f"has a host that is never called: {refusal}" if refusal else None
        if problem is not None:
            raise ValidationFailed([FieldError("url", problem)])

    async def get(self, name: str) -> Handler:
        async with self.db.transaction() as conn:
            handler = await self.handlers.get(conn, name)
        if handler is None:
            raise NotFound("handler", name)
        return handler

    async def list(self) -> list[Handler]:
        async with self.db.transaction() as conn:
            return await self.handlers.list(conn)

    async def delete(self, name: str) -> None:
        async with self.db.transaction() as conn:
            # Lock first, then look: the usage check's snapshot then sees every enqueue that
            # held the handler before us.
            if not await self.handlers.lock_for_delete(conn, name):
                raise NotFound("handler", name)
            usage = await self.handlers.usage(conn, name)
            if usage.has_executions:
                raise Conflict(f"handler {name!r} has ENQUEUED or PROCESSING executions")
            if usage.has_schedules:
                raise Conflict(f"handler {name!r} is used by schedules")
            await self.handlers.delete(conn, name)

    async def add_secret(self, name: str, expire_others_after: float | None = None) -> NewHandlerSecret:
        """A new signing secret: from now on every dispatch is signed with it too, beside the
        handler's other active secrets, until they are deleted or expire (after
        `expire_others_after` seconds, when given). Its value is returned this once."""
        secret = new_handler_secret()
        stored = self.cipher.seal(secret)
        async with self.db.transaction() as conn:
            if not await self.handlers.lock_for_secrets(conn, name):
                raise NotFound("handler", name)
            active = (await self.handlers.secrets_of(conn, [name])).get(name, ())
            if len(active) >= MAX_ACTIVE_SECRETS:
                raise Conflict(f"handler {name!r} has {len(active)} active secrets, the most it may hold: delete one "
                               "before adding another")
            added = await self.handlers.add_secret(conn, name, stored, expire_others_after)
        return NewHandlerSecret(id=added.id, secret=secret, created_at=added.created_at)

    async def delete_secret(self, name: str, secret_id: UUID) -> None:
        """Retire one secret at once. Refused (Conflict) for the handler's last secret without an
        expiry, which would leave it none to sign with: the guard holds under concurrent deletes,
        since each runs with the handler's row locked."""
        async with self.db.transaction() as conn:
            if not await self.handlers.lock_for_secrets(conn, name):
                raise NotFound("handler", name)
            found, deleted = await self.handlers.delete_secret(conn, name, secret_id)
        if not found:
            raise NotFound("secret", f"{secret_id} of handler {name!r}")
        if not deleted:
            raise Conflict(f"secret {secret_id} is the last secret of handler {name!r} that does not expire: add "
                           f"another (POST /v1/handlers/{name}/secrets) before deleting it")
