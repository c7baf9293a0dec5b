"""Jobwire's Python SDK: the API client (blocking and asyncio, grouped by resource), transactional
enqueue (`jobwire.outbox`), the handler toolkit (`jobwire.handler`) and the `jobwire` command.
Light on purpose: httpx and rich, never the service's own packages."""

from jobwire._retry import Retries
from jobwire._version import __version__
from jobwire.client import AsyncJobwireClient, JobwireClient
from jobwire.errors import InvalidResponse, JobwireError, ProblemError, Unavailable
from jobwire.models import (
    TERMINAL_STATES,
    WORKFLOW_STATES,
    AdaptiveLimit,
    AddedJobs,
    ApiKey,
    Attempt,
    Blocker,
    Blockers,
    BulkDryRun,
    BulkResult,
    Circuit,
    ConcurrencyKey,
    Debounce,
    Delivery,
    Event,
    EventPage,
    Execution,
    Handler,
    HandlerBatch,
    HandlerSecret,
    Health,
    KeyRate,
    LogEntry,
    Node,
    Page,
    Progress,
    Queue,
    RateLimit,
    Readiness,
    Schedule,
    Signal,
    SignalSent,
    StreamedEvent,
    Subscription,
    TransitionEvent,
    Workflow,
    WorkflowEvent,
    WorkflowItem,
    WorkflowJob,
    WorkflowRef,
)

__all__ = ["TERMINAL_STATES", "WORKFLOW_STATES", "AdaptiveLimit", "AddedJobs", "ApiKey", "AsyncJobwireClient",
           "Attempt", "Blocker", "Blockers", "BulkDryRun", "BulkResult", "Circuit", "ConcurrencyKey", "Debounce",
           "Delivery", "Event", "EventPage", "Execution", "Handler", "HandlerBatch", "HandlerSecret", "Health",
           "InvalidResponse", "JobwireClient", "JobwireError", "KeyRate", "LogEntry", "Node", "Page", "ProblemError",
           "Progress", "Queue", "RateLimit", "Readiness", "Retries", "Schedule", "Signal", "SignalSent",
           "StreamedEvent", "Subscription", "TransitionEvent", "Unavailable", "Workflow", "WorkflowEvent",
           "WorkflowItem", "WorkflowJob", "WorkflowRef", "__version__"]
