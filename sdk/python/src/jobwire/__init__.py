"""Jobwire's Python SDK: the API client (sync and asyncio), transactional enqueue
(`jobwire.outbox`) and the `jobwire` command. Light on purpose: httpx, standardwebhooks and rich,
never the service's own packages."""

from jobwire._retry import Retries
from jobwire._version import __version__
from jobwire.client import AsyncJobwireClient, JobwireClient
from jobwire.errors import ProblemError, Unavailable
from jobwire.models import TERMINAL_STATES, Execution

__all__ = ["AsyncJobwireClient", "Execution", "JobwireClient", "ProblemError", "Retries", "TERMINAL_STATES",
           "Unavailable", "__version__"]
