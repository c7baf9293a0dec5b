"""The services a request can reach, set on app.state by the composition root."""

from __future__ import annotations

from dataclasses import dataclass

from fastapi import Request

from app.services.bulk import BulkService
from app.services.callbacks import CallbackService
from app.services.coordination import CoordinationService
from app.services.enqueue import EnqueueService
from app.services.events import EventFeedService
from app.services.executions import ExecutionService
from app.services.handlers import HandlerService
from app.services.blockers import BlockerService
from app.services.health import HealthService
from app.services.keys import KeyService
from app.services.metrics import MetricsService
from app.services.queues import QueueService
from app.services.retention import PurgeService
from app.services.schedules import ScheduleService
from app.services.signals import SignalService
from app.services.subscriptions import SubscriptionService
from app.services.workflows import WorkflowService


@dataclass(frozen=True, slots=True)
class Services:
    enqueue: EnqueueService
    executions: ExecutionService
    handlers: HandlerService
    callbacks: CallbackService
    health: HealthService
    coordination: CoordinationService
    queues: QueueService
    schedules: ScheduleService
    metrics: MetricsService
    purge: PurgeService
    bulk: BulkService
    blockers: BlockerService
    keys: KeyService
    events: EventFeedService
    subscriptions: SubscriptionService
    workflows: WorkflowService
    signals: SignalService


def services_of(request: Request) -> Services:
    """The services, read by each route from its request rather than through a FastAPI dependency:
    a dependency costs every request its solving (bench/README.md, "Figures the code rests on")."""
    return request.app.state.services
