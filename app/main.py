"""Composition root: Settings → database → services → API and runtime loops (dispatcher,
coordinator, scheduler, pruner)."""

from __future__ import annotations

import asyncio
import logging
import secrets
import string
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager

from fastapi import FastAPI

from app.api.app import create_api
from app.api.services import Services
from app.config import Settings
from app.coordinator.coordinator import Coordinator, CoordinatorConfig
from app.db.database import Database
from app.db.embedded import EmbeddedPostgres, EmbeddedStartFailed
from app.db.connection import DatabaseConfig, asyncpg_dsn, server_settings
from app.db.migrate import upgrade
from app.db.notify import NotifyListener
from app.dispatcher.dispatcher import Dispatcher, DispatcherConfig
from app.domain.logfields import fields
from app.domain.metrics import NodeCounters
from app.domain.networks import SETTING as NETWORKS_SETTING
from app.domain.networks import InvalidNetworks, NetworkPolicy, parse_networks
from app.pruner.pruner import Pruner, PrunerConfig
from app.scheduler.scheduler import Scheduler, SchedulerConfig
from app.domain.retry import RetryPolicy
from app.delivery.secret_cipher import SecretCipher
from app.delivery.destinations import Resolver, system_resolver
from app.delivery.transport import AiohttpTransport, Http11Transport
from app.services.api_keys import ApiKeyService
from app.services.bulk import BulkService
from app.services.callbacks import CallbackService, load_server_key
from app.services.coordination import CoordinationConfig, CoordinationService
from app.services.enqueue import EnqueueLimits, EnqueueService
from app.services.metrics import MetricsService
from app.services.executions import ExecutionService
from app.services.handlers import HandlerService
from app.services.health import HealthService
from app.services.outcomes import ClaimConfig, OutcomeService
from app.services.queues import QueueService
from app.services.retention import PruneConfig, PruneService, PurgeService
from app.services.schedules import ScheduleLimits, ScheduleService
from app.services.scheduling import SchedulingConfig, SchedulingService
from app.startup import StartupFailure, database_failure

log = logging.getLogger("jobwire")
_ALPHABET = string.ascii_lowercase + string.digits


def new_node_id(node_name: str) -> str:
    return f"{node_name}-{''.join(secrets.choice(_ALPHABET) for _ in range(8))}"


async def resolve_database_url(settings: Settings) -> tuple[str, EmbeddedPostgres | None]:
    if settings.database_url:
        return settings.database_url, None
    embedded = EmbeddedPostgres(settings.data_dir)
    try:
        return await asyncio.to_thread(embedded.start), embedded
    except EmbeddedStartFailed as exc:
        raise StartupFailure("JOBWIRE_DATA_DIR", str(exc)) from exc


async def open_database(settings: Settings, url: str, node_id: str, embedded: bool) -> tuple[Database, str]:
    """Migrations (JOBWIRE_MIGRATE_ON_START), the pool and the server key: the node's first
    database work, where a wrong URL, a missing database or a refused login shows
    (StartupFailure naming the setting)."""
    setting = "JOBWIRE_DATA_DIR" if embedded else "JOBWIRE_DATABASE_URL"
    db: Database | None = None
    try:
        if settings.migrate_on_start:
            before, after = await upgrade(url, settings.db_schema)
            if before == after:
                log.info("migrations: the database is already at head (%s)", after,
                         extra=fields(node=node_id, revision=after))
            else:
                log.info("migrations: the database was at %s, now at %s (head)",
                         before or "no revision (empty)", after,
                         extra=fields(node=node_id, from_revision=before, to_revision=after))
        db = await Database.open(DatabaseConfig(url=url, schema=settings.db_schema, pool_size=settings.db_pool_size))
        return db, await load_server_key(db)
    except Exception as exc:
        if db is not None:
            await db.close()
        failure = database_failure(exc, url, setting)
        if failure is None:
            raise
        raise failure from exc


@contextmanager
def recorded_failure(app: FastAPI) -> Iterator[None]:
    """Keeps a StartupFailure on app.state, where `jobwire serve` finds it to say it in one line
    (uvicorn only learns that the start-up failed)."""
    try:
        yield
    except StartupFailure as failure:
        app.state.startup_failure = failure
        raise


def announce(app: FastAPI) -> None:
    """The node's start line, logged once its port takes connections (app/cli.py)."""
    node = app.state.node_fields
    log.info("node %s serving on %s (database %s)", node["node"], node["public_url"], node["database"],
             extra=fields(**node))


def handler_networks(settings: Settings) -> NetworkPolicy:
    """JOBWIRE_HANDLER_NETWORKS as a policy; a StartupFailure naming it when it does not parse."""
    try:
        return parse_networks(settings.handler_networks)
    except InvalidNetworks as exc:
        raise StartupFailure(NETWORKS_SETTING, str(exc)) from exc


def create_app(settings: Settings | None = None, *, background: bool = True,
               resolver: Resolver = system_resolver) -> FastAPI:
    """The Jobwire application. background=False serves the API alone (no dispatcher, no
    coordinator loops): for tests that share one server while emptying its tables. `resolver`:
    how the dispatch clients resolve handler hosts (tests inject names of their own)."""
    settings = settings or Settings()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        node_id = new_node_id(settings.node_name)
        with recorded_failure(app):
            networks = handler_networks(settings)
            url, embedded = await resolve_database_url(settings)
        node = {"node": node_id, "public_url": settings.effective_public_url,
                "database": "embedded" if embedded else "external"}
        try:
            with recorded_failure(app):
                db, server_key = await open_database(settings, url, node_id, embedded is not None)
            outcomes = OutcomeService(
                db,
                RetryPolicy(settings.retry_base_delay, settings.retry_max_delay),
                ClaimConfig(node_id=node_id, queues=tuple(settings.queues),
                            default_timeout=settings.execution_timeout),
            )
            counters = NodeCounters()
            # One cipher for the API and the dispatcher: the secrets it decrypts are cached once.
            cipher = SecretCipher(settings.secret_key.get_secret_value() if settings.secret_key else None)
            callbacks = CallbackService(db, server_key, outcomes, settings.execution_timeout, counters=counters)
            coordination = CoordinationService(
                db, CoordinationConfig(node_id=node_id, heartbeat_timeout=settings.heartbeat_timeout))
            app.state.services = Services(
                enqueue=EnqueueService(db, EnqueueLimits(settings.max_payload_bytes), counters=counters),
                executions=ExecutionService(db),
                handlers=HandlerService(db, cipher=cipher, networks=networks),
                callbacks=callbacks,
                health=HealthService(db),
                coordination=coordination,
                queues=QueueService(db),
                schedules=ScheduleService(db, ScheduleLimits(settings.max_payload_bytes)),
                metrics=MetricsService(db, node_id, counters),
                purge=PurgeService(db),
                bulk=BulkService(db),
            )
            app.state.node_id = node_id
            # Database keys and whether the API is open (app/api/auth.py); bootstrap keys: create_api.
            app.state.api_key_service = ApiKeyService(db, bootstrap=bool(settings.api_keys))
            transport_class = Http11Transport if settings.dispatch_client == "http11" else AiohttpTransport
            transport = transport_class(settings.concurrency, settings.max_payload_bytes, networks=networks,
                                        resolver=resolver)
            coordinator = Coordinator(
                CoordinatorConfig(heartbeat_interval=settings.heartbeat_interval,
                                  scan_interval=settings.scan_interval),
                coordination,
            )
            dispatcher = Dispatcher(
                DispatcherConfig(concurrency=settings.concurrency, poll_interval=settings.poll_interval,
                                 public_url=settings.effective_public_url,
                                 retry_max_delay=settings.retry_max_delay),
                outcomes,
                transport,
                callbacks.token_for,
                counters,
                expect_deadline=coordinator.expect_deadline,
                cipher=cipher,
            )
            counters.in_flight = lambda: dispatcher.in_flight
            listener = NotifyListener(asyncpg_dsn(url), db.notify_channel, dispatcher.wake,
                                      server_settings(settings.db_schema))
            scheduler = Scheduler(
                SchedulerConfig(interval=settings.scheduler_interval),
                SchedulingService(db, SchedulingConfig(node_id=node_id,
                                                       misfire_threshold=settings.misfire_threshold)),
            )
            pruner = Pruner(PrunerConfig(interval=settings.prune_interval),
                            PruneService(db, PruneConfig(retention_succeeded=settings.retention_succeeded,
                                                         retention_failed=settings.retention_failed)))
            app.state.dispatcher = dispatcher
            app.state.coordinator = coordinator
            app.state.scheduler = scheduler
            app.state.pruner = pruner
            if background:
                await coordinator.start()  # the first heartbeat precedes the first claim
                dispatcher.start()
                listener.start()
                scheduler.start()
                pruner.start()
            app.state.node_fields = node
            try:
                yield
            finally:
                log.info("node %s stopping: draining in-flight calls for up to %s s", node_id,
                         settings.shutdown_grace, extra=fields(**node))
                # Stop claiming, let calls finish within the grace, abandon (and re-enqueue) the
                # rest, then delete the heartbeat row.
                await listener.stop()
                if background:
                    await scheduler.stop()
                    await pruner.stop()
                    await dispatcher.stop(settings.shutdown_grace)
                    await coordinator.stop()
                await transport.close()
                await db.close()
        finally:
            if embedded is not None:
                await asyncio.to_thread(embedded.stop)
        log.info("node %s stopped", node_id, extra=fields(**node))

    return create_api(api_keys=settings.api_keys, max_request_bytes=settings.max_request_bytes,
                      lifespan=lifespan)
