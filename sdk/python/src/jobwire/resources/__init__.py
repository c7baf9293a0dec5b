"""The client's resources, each a blocking and an asyncio facade over one set of request builders."""

from jobwire.resources.api_keys import ApiKeys, AsyncApiKeys
from jobwire.resources.events import AsyncEventFeed, AsyncEvents, EventFeed, Events
from jobwire.resources.executions import AsyncExecutions, Executions
from jobwire.resources.handlers import AsyncHandlers, Handlers
from jobwire.resources.jobs import AsyncJobs, Jobs
from jobwire.resources.queues import AsyncNodes, AsyncQueues, Nodes, Queues
from jobwire.resources.schedules import AsyncSchedules, Schedules

__all__ = ["ApiKeys", "AsyncApiKeys", "AsyncEventFeed", "AsyncEvents", "AsyncExecutions", "AsyncHandlers", "AsyncJobs",
           "AsyncNodes", "AsyncQueues", "AsyncSchedules", "EventFeed", "Events", "Executions", "Handlers", "Jobs",
           "Nodes", "Queues", "Schedules"]
