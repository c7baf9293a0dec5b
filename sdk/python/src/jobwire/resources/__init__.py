"""The client's resources, each a blocking and an asyncio facade over one set of request builders."""

from jobwire.resources.api_keys import ApiKeys, AsyncApiKeys
from jobwire.resources.events import AsyncEventFeed, AsyncEvents, AsyncEventStream, EventFeed, Events, EventStream
from jobwire.resources.executions import AsyncExecutions, Executions
from jobwire.resources.handlers import AsyncHandlers, Handlers
from jobwire.resources.jobs import AsyncJobs, Jobs
from jobwire.resources.queues import AsyncNodes, AsyncQueues, Nodes, Queues
from jobwire.resources.schedules import AsyncSchedules, Schedules
from jobwire.resources.subscriptions import AsyncSubscriptions, Subscriptions
from jobwire.resources.workflows import AsyncWorkflows, Workflows

__all__ = ["ApiKeys", "AsyncApiKeys", "AsyncEventFeed", "AsyncEventStream", "AsyncEvents", "AsyncExecutions",
           "AsyncHandlers", "AsyncJobs", "AsyncNodes", "AsyncQueues", "AsyncSchedules", "AsyncSubscriptions",
           "AsyncWorkflows", "EventFeed", "EventStream", "Events", "Executions", "Handlers", "Jobs", "Nodes", "Queues",
           "Schedules", "Subscriptions", "Workflows"]
