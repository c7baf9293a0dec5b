"""The services the dashboard's pages call, set on app.state.ui by the composition root."""

from __future__ import annotations

from dataclasses import dataclass, field

from starlette.requests import Request

from app.services.blockers import BlockerService
from app.services.bulk import BulkService
from app.services.coordination import CoordinationService
from app.services.dashboard import DashboardService
from app.services.executions import ExecutionService
from app.services.handlers import HandlerService
from app.services.keys import KeyService
from app.services.queues import QueueService
from app.services.schedules import ScheduleService
from app.services.signals import SignalService
from app.services.subscriptions import SubscriptionService
from app.services.workflows import WorkflowService


@dataclass(frozen=True, slots=True)
class UiServices:
    executions: ExecutionService
    queues: QueueService
    bulk: BulkService
    blockers: BlockerService
    signals: SignalService
    dashboard: DashboardService
    schedules: ScheduleService
    handlers: HandlerService
    keys: KeyService
    coordination: CoordinationService
    workflows: WorkflowService
    subscriptions: SubscriptionService
    server_key: str = field(repr=False)  # the key every node shares: sessions and CSRF tokens are signed under it


def ui_of(request: Request) -> UiServices:
    return request.app.state.ui
