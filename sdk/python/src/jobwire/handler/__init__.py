"""The handler toolkit: `async def handle(job, ctx)` as a Jobwire handler, on any ASGI server.

    from jobwire.handler import asgi_app

    async def handle(job, ctx):
        ctx.progress(total=1, succeeded=1)
        return {"hello": job.payload}

    app = asgi_app(handle, os.environ["JOBWIRE_HANDLER_SECRET"])   # uvicorn module:app

A job of a workflow knows where it stands (`job.workflow.id`, `job.workflow.ref`) and its
parents, each with its state and result (`job.parents["resize"].result`; `await ctx.parents()`
when the dispatch left large results out).

A handler waits without holding a slot by suspending (a durable wait), then runs again when a
signal comes, a time comes or a timeout passes:

    async def approve(job, ctx):
        if job.resume is None:                      # the first dispatch
            await ctx.run_step_once("ask", lambda: ask_for_approval(job.payload))
            ctx.suspend(signals=["approved", "rejected"], timeout_seconds=86400)
        if job.resume.reason == "timeout":
            raise Permanent("nobody answered in a day")
        return {"approved": job.resume.signals[0].name == "approved"}

A handler registered with `batch` gets its due jobs together; its batch form answers each:

    async def handle_batch(jobs):
        rows = await db.insert_many([job.payload for job in jobs])
        return [{"id": row.id} if row.ok else Permanent(row.problem) for row in rows]

    app = batch_asgi_app(handle_batch, os.environ["JOBWIRE_HANDLER_SECRET"])
"""

from __future__ import annotations

from collections.abc import Iterable

import httpx

from jobwire.handler._asgi import Handle, HandlerApp
from jobwire.handler._batch import BatchHandlerApp, HandleBatch
from jobwire.handler._context import Context
from jobwire.handler._errors import CallbackError, Permanent, Suspend
from jobwire.handler._job import Child, Job, Parent, ReceivedSignal, Resume

__all__ = ["BatchHandlerApp", "CallbackError", "Child", "Context", "HandlerApp", "Job", "Parent", "Permanent",
           "ReceivedSignal", "Resume", "Suspend", "asgi_app", "batch_asgi_app"]


def asgi_app(handle: Handle, secret: str | Iterable[str], *, sync_window: float = 10.0,
             http_client: httpx.AsyncClient | None = None, callback_timeout: float = 10.0,
             shutdown_grace: float = 10.0) -> HandlerApp:
    """An ASGI app running `await handle(job, ctx)` for each attempt Jobwire dispatches.

    `secret`: the handler's `whsec_…` secret, or several during a rotation (a request is
    accepted when any of them signed it). A request with no valid signature, signed more than
    5 minutes away from now, or a replay of one already received (the same webhook-id,
    timestamp and body) gets a 401, and `handle` does not run. What `handle` returns (JSON) is
    the result; an exception fails the attempt (retried while attempts remain), recorded with
    its class name as error_type and str(exc) as the error; `Permanent` fails it with no
    retry; `ctx.suspend(…)` (the exception `Suspend`) makes it wait, durably, for a time, a
    signal or a timeout. `handle` gets `sync_window` seconds (or half the time to the attempt's deadline,
    when sooner) to answer in the request; after that the app answers 202, heartbeats, and
    completes through the callback when `handle` returns. Callbacks Jobwire does not answer
    (or answers 429, 502, 503, 504) are sent again with backoff until the attempt's deadline.
    `http_client`: the httpx client for callbacks (default: one of the app's own,
    `callback_timeout` seconds a call). On lifespan shutdown, running attempts get
    `shutdown_grace` seconds to finish."""
    return HandlerApp(handle, secret, sync_window=sync_window, http_client=http_client,
                      callback_timeout=callback_timeout, shutdown_grace=shutdown_grace)


def batch_asgi_app(handle_batch: HandleBatch, secret: str | Iterable[str]) -> BatchHandlerApp:
    """An ASGI app for a handler registered with `batch`: `await handle_batch(jobs)` for each call
    Jobwire makes with several due jobs (`{"executions": [...]}`), answered in the request.

    `handle_batch` returns one entry per job, in the order of `jobs`: the job's result (JSON), or
    an exception instance, its failed attempt (retried while attempts remain; `Permanent(...)` not
    retried), recorded as the single form records a raised one. An exception raised by
    `handle_batch`, or a list of another length, fails every job of the call. Signatures and
    replays are checked as by `asgi_app` (401); a single dispatch (a Jobwire node that does not
    batch) is handled as a batch of one and answered in the single form. No callbacks: there is
    no `ctx`, and the answer must come before the soonest deadline of the jobs."""
    return BatchHandlerApp(handle_batch, secret)
