"""Composition root: Settings → database → services → API and runtime loops (dispatcher,
coordinator, scheduler)."""

from __future__ import annotations

import asyncio
import logging
import secrets
import string
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI

from app.api.app import create_api
from app.api.services import Services
from app.config import Settings
from app.coordinator.coordinator import Coordinator, CoordinatorConfig
from app.db.database import Database
from app.db.embedded import EmbeddedPostgres
from app.db.connection import DatabaseConfig, asyncpg_dsn, server_settings
from app.db.migrate import upgrade
from app.db.notify import NotifyListener
from app.dispatcher.dispatcher import Dispatcher, DispatcherConfig
from app.domain.metrics import NodeCounters
from app.scheduler.scheduler import Scheduler, SchedulerConfig
from app.domain.retry import RetryPolicy
from app.handlers.transport import AiohttpTransport, Http11Transport
from app.services.callbacks import CallbackService, load_server_key
from app.services.coordination import CoordinationConfig, CoordinationService
from app.services.enqueue import EnqueueLimits, EnqueueService
from app.services.metrics import MetricsService
from app.services.executions import ExecutionService
from app.services.handlers import HandlerService
from app.services.health import HealthService
from app.services.outcomes import ClaimConfig, OutcomeService
from app.services.queues import QueueService
from app.services.schedules import ScheduleLimits, ScheduleService
from app.services.scheduling import SchedulingConfig, SchedulingService

log = logging.getLogger("jobwire")
_ALPHABET = string.ascii_lowercase + string.digits


def new_node_id(node_name: str) -> str:
    return f"{node_name}-{''.join(secrets.choice(_ALPHABET) for _ in range(8))}"


async def resolve_database_url(settings: Settings) -> tuple[str, EmbeddedPostgres | None]:
    if settings.database_url:
        return settings.database_url, None
    embedded = EmbeddedPostgres(settings.data_dir)
    return await asyncio.to_thread(embedded.start), embedded


def create_app(settings: Settings | None = None, *, background: bool = True) -> FastAPI:
    """The Jobwire application. background=False serves the API alone (no dispatcher, no
    coordinator loops): for tests that share one server while emptying its tables."""
    settings = settings or Settings()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        node_id = new_node_id(settings.node_name)
        url, embedded = await resolve_database_url(settings)
        try:
            if settings.migrate_on_start:
                await upgrade(url, settings.db_schema)
            db = await Database.open(DatabaseConfig(url=url, schema=settings.db_schema,
                                                    pool_size=settings.db_pool_size))
            server_key = await load_server_key(db)
            outcomes = OutcomeService(
                db,
                RetryPolicy(settings.retry_base_delay, settings.retry_max_delay),
                ClaimConfig(node_id=node_id, queues=tuple(settings.queues),
                            default_timeout=settings.execution_timeout),
            )
            counters = NodeCounters()
            callbacks = CallbackService(db, server_key, outcomes, settings.execution_timeout, counters=counters)
            coordination = CoordinationService(
                db, CoordinationConfig(node_id=node_id, heartbeat_timeout=settings.heartbeat_timeout))
            app.state.services = Services(
                enqueue=EnqueueService(db, EnqueueLimits(settings.max_payload_bytes), counters=counters),
                executions=ExecutionService(db),
                handlers=HandlerService(db),
                callbacks=callbacks,
                health=HealthService(db),
                coordination=coordination,
                queues=QueueService(db),
                schedules=ScheduleService(db, ScheduleLimits(settings.max_payload_bytes)),
                metrics=MetricsService(db, node_id, counters),
            )
            app.state.node_id = node_id
            transport_class = Http11Transport if settings.dispatch_client == "http11" else AiohttpTransport
            transport = transport_class(settings.concurrency, settings.max_payload_bytes)
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
            )
            counters.in_flight = lambda: dispatcher.in_flight
            listener = NotifyListener(asyncpg_dsn(url), db.notify_channel, dispatcher.wake,
                                      server_settings(settings.db_schema))
            scheduler = Scheduler(
                SchedulerConfig(interval=settings.scheduler_interval),
                SchedulingService(db, SchedulingConfig(node_id=node_id,
                                                       misfire_threshold=settings.misfire_threshold)),
            )
            app.state.dispatcher = dispatcher
            app.state.coordinator = coordinator
            app.state.scheduler = scheduler
            if background:
                await coordinator.start()  # the first heartbeat precedes the first claim
                dispatcher.start()
                listener.start()
                scheduler.start()
            log.info("node %s serving on %s (database %s)", node_id, settings.effective_public_url,
                     "embedded" if embedded else "external")
            try:
                yield
            finally:
                # Stop claiming, let calls finish within the grace, abandon (and re-enqueue) the
                # rest, then delete the heartbeat row.
                await listener.stop()
                if background:
                    await scheduler.stop()
                    await dispatcher.stop(settings.shutdown_grace)
                    await coordinator.stop()
                await transport.close()
                await db.close()
        finally:
            if embedded is not None:
                await asyncio.to_thread(embedded.stop)

    return create_api(api_keys=settings.api_keys, max_request_bytes=settings.max_request_bytes,
                      lifespan=lifespan)
