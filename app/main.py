"""Composition root: Settings → database → services → API and runtime loops (dispatcher,
coordinator, scheduler, pruner)."""

from __future__ import annotations

import asyncio
import logging
import secrets
import string
from collections.abc import AsyncIterator, Iterator, Mapping
from contextlib import asynccontextmanager, contextmanager
from typing import TYPE_CHECKING

from fastapi import FastAPI

from app.api.app import create_api
from app.api.services import Services
from app.config import Settings, client_key_refusal
from app.coordinator.coordinator import Coordinator, CoordinatorConfig
from app.db.database import Database
from app.db.embedded import EmbeddedPostgres, EmbeddedStartFailed
from app.db.connection import DatabaseConfig, asyncpg_dsn, server_settings
from app.db.migrate import head_revisions, newer_than_this_build, upgrade
from app.db.notify import NotifyListener
from app.dispatcher.dispatcher import Dispatcher, DispatcherConfig
from app.domain.errors import DatabaseUnavailable
from app.domain.logfields import fields
from app.domain.metrics import NodeCounters
from app.domain.address_policy import SETTING as NETWORKS_SETTING
from app.domain.address_policy import InvalidNetworks, NetworkPolicy, parse_networks
from app.pruner.pruner import Pruner, PrunerConfig
from app.deliverer.deliverer import DelivererConfig, EventDeliverer
from app.domain.subscriptions import MAX_ANSWER_BYTES
from app.services.event_delivery import DeliveryConfig, EventDeliveryService
from app.services.signals import SignalService
from app.services.subscriptions import SubscriptionService
from app.services.workflows import WorkflowService
from app.scheduler.scheduler import Scheduler, SchedulerConfig
from app.domain.retry import RetryPolicy
from app.delivery.secret_cipher import SecretCipher
from app.delivery.destinations import Resolver, system_resolver
from app.delivery.transport import AiohttpTransport, Http11Transport
from app.services.api_keys import ApiKeyService
from app.services.blockers import BlockerService
from app.services.events import EventFeedService
from app.services.keys import KeyService
from app.services.bulk import BulkService
from app.services.callbacks import CallbackService
from app.services.coordination import CoordinationConfig, CoordinationService
from app.services.enqueue import EnqueueLimits, EnqueueService
from app.services.metrics import MetricsService
from app.services.executions import ExecutionService
from app.services.handlers import HandlerService
from app.services.health import HealthService
from app.services.dashboard import DashboardService
from app.services.outcomes import ClaimConfig, OutcomeService
from app.services.queues import QueueService
from app.services.retention import PruneConfig, PruneService, PurgeService
from app.services.schedules import ScheduleLimits, ScheduleService
from app.services.secrets_at_rest import seal_secrets_at_rest
from app.services.scheduling import SchedulingConfig, SchedulingService
from app.startup import StartupFailure, database_failure, secret_key_failure
from app.ui.app import install as install_dashboard
from app.ui.context import UiServices

if TYPE_CHECKING:  # imported with JOBWIRE_OTEL only (open_telemetry)
    from app.delivery.telemetry import Telemetry

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


async def open_database(settings: Settings, url: str, node_id: str, embedded: bool,
                        cipher: SecretCipher) -> tuple[Database, str]:
    """Migrations (JOBWIRE_MIGRATE_ON_START), the pool, the secrets at rest sealed under `cipher`
    and the server key: the node's first database work, where a wrong URL, a missing database, a
    refused login or a JOBWIRE_SECRET_KEY that cannot read the stored secrets shows (StartupFailure
    naming the setting)."""
    setting = "JOBWIRE_DATA_DIR" if embedded else "JOBWIRE_DATABASE_URL"
    db: Database | None = None
    try:
        if settings.migrate_on_start:
            before, after = await upgrade(url, settings.db_schema)
            if after is not None and newer_than_this_build(set(after.split(","))):
                log.warning("migrations: the database is at %s, a revision of a newer build than this one "
                            "(head %s); not migrating, this node runs on it as a node of the previous version",
                            after, ",".join(sorted(head_revisions())),
                            extra=fields(node=node_id, revision=after))
            elif before == after:
                log.info("migrations: the database is already at head (%s)", after,
                         extra=fields(node=node_id, revision=after))
            else:
                log.info("migrations: the database was at %s, now at %s (head)",
                         before or "no revision (empty)", after,
                         extra=fields(node=node_id, from_revision=before, to_revision=after))
        db = await Database.open(DatabaseConfig(url=url, schema=settings.db_schema, pool_size=settings.db_pool_size))
        return db, (await seal_secrets_at_rest(db, cipher)).server_key
    except Exception as exc:
        if db is not None:
            await db.close()
        failure = secret_key_failure(exc) or database_failure(exc, url, setting)
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


async def refuse_client_key(environ: Mapping[str, str], settings: Settings, keys: ApiKeyService) -> None:
    """A StartupFailure naming JOBWIRE_API_KEY when the operator's environment holds the client's
    key while this server would take none (app.config.client_key_refusal)."""
    if client_key_refusal(environ, settings, database_keys=False) is None:
        return  # not set, or bootstrap keys close the server: no need to ask the database
    refusal = client_key_refusal(environ, settings, database_keys=not await keys.is_open())
    if refusal is not None:
        raise StartupFailure("JOBWIRE_API_KEY", refusal)


async def warn_of_default_public_url(settings: Settings, coordination: CoordinationService, node_id: str) -> None:
    """With other nodes alive, a callback URL naming this node (JOBWIRE_PUBLIC_URL unset) fails
    whenever this node is down, and handlers' callbacks then wait for it: say so once, at start."""
    if settings.public_url:
        return
    try:
        others = [n.server_id for n in await coordination.live_nodes() if n.server_id != node_id]
    except DatabaseUnavailable:
        return
    if others:
        log.warning("JOBWIRE_PUBLIC_URL is not set: handlers call back %s, this node alone, while %d other "
                    "nodes are alive; set it to an address every node answers (a load balancer in front of them)",
                    settings.effective_public_url, len(others),
                    extra=fields(node=node_id, public_url=settings.effective_public_url, other_nodes=len(others)))


def open_telemetry(settings: Settings) -> Telemetry | None:
    """JOBWIRE_OTEL: the node's spans and histograms on OpenTelemetry's global providers; None
    when off (no module imports the API then). A StartupFailure naming it without the API."""
    if not settings.otel:
        return None
    try:
        from app.delivery.telemetry import Telemetry
    except ImportError as exc:
        raise StartupFailure("JOBWIRE_OTEL", f"the OpenTelemetry API is not installed ({exc}): "
                                             "pip install 'jobwire[otel]', or unset JOBWIRE_OTEL") from exc
    return Telemetry()


def create_app(settings: Settings | None = None, *, background: bool = True,
               resolver: Resolver = system_resolver, environ: Mapping[str, str] | None = None,
               telemetry: Telemetry | None = None) -> FastAPI:
    """The Jobwire application. background=False serves the API alone (no dispatcher, no
    coordinator loops): for tests that share one server while emptying its tables. `resolver`:
    how the dispatch clients resolve handler hosts (tests inject names of their own). `environ`:
    the operator's environment, checked for a client's variable that protects nothing
    (`jobwire serve` passes os.environ). `telemetry`: spans and histograms on providers of the
    caller's (tests); else JOBWIRE_OTEL decides (open_telemetry)."""
    environ = environ or {}
    settings = settings or Settings()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        node_id = new_node_id(settings.node_name)
        with recorded_failure(app):
            networks = handler_networks(settings)
            traces = telemetry or open_telemetry(settings)
            url, embedded = await resolve_database_url(settings)
        node = {"node": node_id, "public_url": settings.effective_public_url,
                "database": "embedded" if embedded else "external"}
        try:
            with recorded_failure(app):
                # One cipher for the API and the dispatcher: the secrets it decrypts are cached once.
                cipher = SecretCipher(settings.secret_key.get_secret_value() if settings.secret_key else None)
                db, server_key = await open_database(settings, url, node_id, embedded is not None, cipher)
                api_keys = ApiKeyService(db, bootstrap=bool(settings.api_keys))
                try:
                    await refuse_client_key(environ, settings, api_keys)
                except BaseException:
                    await db.close()
                    raise
            outcomes = OutcomeService(
                db,
                RetryPolicy(settings.retry_base_delay, settings.retry_max_delay),
                ClaimConfig(node_id=node_id, queues=tuple(settings.queues),
                            default_timeout=settings.execution_timeout),
            )
            counters = NodeCounters()
            callbacks = CallbackService(db, server_key, outcomes, settings.execution_timeout, counters=counters,
                                        telemetry=traces)
            coordination = CoordinationService(
                db, CoordinationConfig(node_id=node_id, heartbeat_timeout=settings.heartbeat_timeout,
                                       queues=tuple(settings.queues) or None))
            executions = ExecutionService(db)
            app.state.services = Services(
                enqueue=EnqueueService(db, EnqueueLimits(settings.max_payload_bytes), counters=counters,
                                       telemetry=traces),
                executions=executions,
                handlers=HandlerService(db, cipher=cipher, networks=networks),
                callbacks=callbacks,
                health=HealthService(db),
                coordination=coordination,
                queues=QueueService(db),
                schedules=ScheduleService(db, ScheduleLimits(settings.max_payload_bytes)),
                metrics=MetricsService(db, node_id, counters),
                purge=PurgeService(db),
                bulk=BulkService(db),
                blockers=BlockerService(db, settings.heartbeat_timeout),
                keys=KeyService(db),
                events=EventFeedService(db),
                subscriptions=SubscriptionService(db, cipher=cipher, networks=networks,
                                                  retry_seconds=settings.event_retry_seconds),
                workflows=WorkflowService(db, EnqueueLimits(settings.max_payload_bytes)),
                signals=SignalService(db),
            )
            services = app.state.services
            # The dashboard (app/ui): the same services, and the server key its cookies are signed with.
            app.state.ui = UiServices(executions=executions, queues=services.queues, bulk=services.bulk,
                                      blockers=services.blockers, signals=services.signals,
                                      dashboard=DashboardService(db, executions, settings.heartbeat_timeout),
                                      schedules=services.schedules, handlers=services.handlers, keys=services.keys,
                                      coordination=services.coordination, workflows=services.workflows,
                                      subscriptions=services.subscriptions, server_key=server_key)
            app.state.node_id = node_id
            # Database keys and whether the API is open (app/api/auth.py); bootstrap keys: create_api.
            app.state.api_key_service = api_keys
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
                telemetry=traces,
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
            # Event deliveries: a client of their own (JOBWIRE_EVENT_CONCURRENCY connections, answers
            # read up to 64 KiB), never the handlers' pool.
            event_transport = transport_class(settings.event_concurrency, MAX_ANSWER_BYTES, networks=networks,
                                              resolver=resolver)
            deliverer = EventDeliverer(
                DelivererConfig(concurrency=settings.event_concurrency),
                EventDeliveryService(db, DeliveryConfig(retry_seconds=settings.event_retry_seconds,
                                                        disable_after=settings.event_disable_after,
                                                        keep_delivered=settings.retention_succeeded,
                                                        keep_dead=settings.retention_failed)),
                event_transport,
                cipher,
                dispatch_busy=lambda: dispatcher.in_flight * 2 >= settings.concurrency,
            )
            app.state.deliverer = deliverer
            if background:
                await coordinator.start()  # the first heartbeat precedes the first claim
                await warn_of_default_public_url(settings, coordination, node_id)
                dispatcher.start()
                listener.start()
                scheduler.start()
                pruner.start()
                deliverer.start()
            app.state.node_fields = node
            # Set by `jobwire serve` on a second interrupt: the drain below stops waiting.
            app.state.cut_short = asyncio.Event()
            try:
                yield
            finally:
                app.state.stopping = True
                log.info("node %s stopping", node_id, extra=fields(**node))
                # Stop claiming, let calls finish within the grace, abandon (and re-enqueue) the
                # rest, then delete the heartbeat row.
                await listener.stop()
                if background:
                    await scheduler.stop()
                    await pruner.stop()
                    await deliverer.stop(min(settings.shutdown_grace, 10.0))
                    await dispatcher.stop(settings.shutdown_grace, app.state.cut_short)
                    await coordinator.stop()
                await transport.close()
                await event_transport.close()
                await db.close()
        finally:
            if embedded is not None:
                await asyncio.to_thread(embedded.stop)
        log.info("node %s stopped", node_id, extra=fields(**node))

    app = create_api(api_keys=settings.api_keys, max_request_bytes=settings.max_request_bytes, lifespan=lifespan)
    install_dashboard(app)
    return app
