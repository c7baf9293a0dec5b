"""Handler registration: upsert (secret minted once), show, list, delete when unused; signing
secrets added and retired (rotation without downtime)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from uuid import UUID

from app.db.database import Database
from app.db.handlers import HandlerRepository
from app.domain.errors import Conflict, FieldError, NotFound, ValidationFailed
from app.domain.handlers import Batch, Handler, RateLimit
from app.domain.handler_secrets import NewHandlerSecret
from app.domain.address_policy import ANY_NETWORK, NetworkPolicy
from app.domain.handler_urls import destination_problem
from app.domain.signing import new_handler_secret
from app.delivery.secret_cipher import PLAIN, SecretCipher
from app.services.signing_secrets import SecretRotation


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
    batch: Batch | None = None


class HandlerService:
    def __init__(self, db: Database, handlers: HandlerRepository | None = None, cipher: SecretCipher = PLAIN,
                 networks: NetworkPolicy = ANY_NETWORK) -> None:
        """cipher: how new secrets are stored (encrypted under JOBWIRE_SECRET_KEY when it is set);
        networks: JOBWIRE_HANDLER_NETWORKS, which a URL's IP literal must satisfy."""
        self.networks = networks
        self.db = db
        self.handlers = handlers or HandlerRepository()
        self.cipher = cipher
        self.rotation = SecretRotation(db, self.handlers.secrets, cipher, "handlers")

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
                batch=spec.batch,
            )
        return (replace(handler, secret=secret) if created else handler), created

    def _check_url(self, url: str) -> None:
        """ValidationFailed naming `url` for a URL that cannot be delivered to (destination_problem)."""
        problem = destination_problem(url, self.networks)
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
        """A new signing secret for the handler's dispatches (SecretRotation.add)."""
        return await self.rotation.add(name, expire_others_after)

    async def delete_secret(self, name: str, secret_id: UUID) -> None:
        """Retire one of the handler's secrets (SecretRotation.delete)."""
        await self.rotation.delete(name, secret_id)
