"""HandlerApp: the ASGI app that turns `async def handle(job, ctx)` into a Jobwire handler.

Per request: verify the signature, refuse a replay, parse the job, start `handle` as a task.
If it finishes within the sync window, answer with its outcome; else answer 202 and complete
through the callback when it does, heartbeating meanwhile. Attempts running after their request
are kept in sets (a task nobody references can be collected mid-flight) until they have
reported."""

from __future__ import annotations

import asyncio
import inspect
import logging
import time
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

import httpx

from jobwire._json import loads
from jobwire.handler._callbacks import Callbacks
from jobwire.handler._context import Context
from jobwire.handler._job import Job, NotADispatch, parse_job
from jobwire.handler._outcome import completion_body, outcome_of, problem, sync_reply
from jobwire.handler._replay import ReplayGuard
from jobwire.handler._reporter import Reporter
from jobwire.handler._retrying import AttemptDeadline, attempt_timeout
from jobwire.handler._signature import BadSignature, secret_keys, verify

log = logging.getLogger("jobwire.handler")

Handle = Callable[[Job, Context], Awaitable[Any]]
Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]

MAX_HEARTBEAT_INTERVAL = 30.0
MIN_HEARTBEAT_INTERVAL = 0.05
# A dispatch is a job's payload, parameters and metadata (1 MiB each by default in Jobwire);
# the cap keeps an unauthenticated caller from making the app buffer without end.
MAX_BODY_BYTES = 32 * 1024 * 1024
# After the shutdown grace, stopped attempts get this long to report their failure.
STOP_REPORT_SECONDS = 5.0


def answer_within(job: Job, sync_window: float, now: float) -> float:
    """How long to wait before answering 202: the sync window, or half the time left to the
    attempt's deadline when that is sooner (the rest is the margin to answer in)."""
    if job.deadline is None:
        return sync_window
    return max(0.0, min(sync_window, (job.deadline.timestamp() - now) / 2))


def heartbeat_interval(job: Job) -> float:
    """A quarter of the attempt's timeout, at most 30 s: each heartbeat moves the deadline to
    now + the timeout, so one that fails (retried at half the interval) costs no deadline."""
    return min(max(attempt_timeout(job) / 4, MIN_HEARTBEAT_INTERVAL), MAX_HEARTBEAT_INTERVAL)


class HandlerApp:
    """An ASGI app (any ASGI server; mount it in Starlette or FastAPI) that serves one handler
    on every path: POST a dispatch, anything else 405. Mounted apps get no lifespan events
    from their parent: call `await app.shutdown()` from the parent's lifespan instead."""

    def __init__(self, handle: Handle, secret: str | Iterable[str], *, sync_window: float = 10.0,
                 http_client: httpx.AsyncClient | None = None, callback_timeout: float = 10.0,
                 shutdown_grace: float = 10.0) -> None:
        if sync_window < 0:
            raise ValueError("sync_window is seconds, at least 0 (0: always answer 202)")
        self._handle = handle
        self._keys = secret_keys(secret)
        self._sync_window = sync_window
        self._client = http_client
        self._owns_client = http_client is None
        self._callback_timeout = callback_timeout
        self._shutdown_grace = shutdown_grace
        self._replays = ReplayGuard()
        self._running: set[asyncio.Task[Any]] = set()  # handle() tasks
        self._finishing: set[asyncio.Task[None]] = set()  # after a 202: wait, flush, complete

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            await self._http(scope, receive, send)
        elif scope["type"] == "lifespan":
            await self._lifespan(receive, send)
        elif scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1003})

    async def shutdown(self, grace: float | None = None) -> None:
        """Best effort: wait up to `grace` seconds (default shutdown_grace) for running attempts
        to finish and report; stop the rest (each reports a retryable failure, so Jobwire
        retries it at once instead of at its deadline); close the callback client."""
        pending = self._running | self._finishing
        if pending:
            await asyncio.wait(pending, timeout=self._shutdown_grace if grace is None else grace)
        for work in list(self._running):
            work.cancel()
        if self._finishing:
            _, stuck = await asyncio.wait(set(self._finishing), timeout=STOP_REPORT_SECONDS)
            for task in stuck:
                task.cancel()
            if stuck:
                await asyncio.wait(stuck)
        if self._owns_client and self._client is not None:
            await self._client.aclose()
            self._client = None

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await self.shutdown()
                await send({"type": "lifespan.shutdown.complete"})
                return

    async def _http(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["method"] != "POST":
            await _respond(send, 405, problem(405, "Method not allowed", "a handler takes POST only"),
                           [(b"allow", b"POST")])
            return
        body = await _read_body(receive)
        if body is None:
            await _respond(send, 413, problem(413, "Too large", f"the body is over {MAX_BODY_BYTES} bytes"))
            return
        headers = {name.decode("latin-1").lower(): value.decode("latin-1") for name, value in scope["headers"]}
        now = time.time()
        try:
            signed = verify(self._keys, headers, body, now)
            if not self._replays.first_time(signed, now):
                # 401 as for a stale timestamp, the check Standard Webhooks libraries make against
                # replays: Jobwire never sends one signed message twice, so a replay is no attempt
                # of its own, and its sender learns nothing of what the first copy did.
                raise BadSignature("a replay: this webhook-id, webhook-timestamp and body were already received")
            job = parse_job(_json(body))
        except BadSignature as exc:
            await _respond(send, 401, problem(401, "Bad signature", str(exc)))
            return
        except NotADispatch as exc:
            await _respond(send, 400, problem(400, "Not a Jobwire dispatch", str(exc)))
            return
        await self._serve(job, receive, send)

    async def _serve(self, job: Job, receive: Receive, send: Send) -> None:
        deadline = AttemptDeadline.of(job, time.monotonic())
        callbacks = Callbacks(self._http_client(), job.execution_id, job.callback_url, job.callback_token, deadline)
        reporter = Reporter(job.execution_id, callbacks, heartbeat_interval(job))
        ctx = Context(job, callbacks, reporter)
        reporter.start()
        work = asyncio.get_running_loop().create_task(_call(self._handle, job, ctx))
        _keep(self._running, work)
        gone = asyncio.get_running_loop().create_task(_disconnected(receive))
        window = answer_within(job, self._sync_window, time.time())
        try:
            if window > 0:  # 0: always 202, even for a handle that returns at once
                await asyncio.wait({work, gone}, timeout=window, return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:  # the server dropped the request: the attempt goes on
            reporter.keep_alive()
            _keep(self._finishing, asyncio.get_running_loop().create_task(_finish(work, job, reporter, callbacks)))
            raise
        finally:
            hung_up = gone.done()
            gone.cancel()
        if window > 0 and work.done() and not hung_up:
            outcome = outcome_of(work, job.execution_id)
            await reporter.close()  # the logs and the last progress land before the outcome
            status, reply = sync_reply(outcome)
            await _respond(send, status, reply)
            return
        # Too slow for a synchronous answer, or Jobwire hung up meanwhile: the attempt is ours
        # to report through the callback.
        if not hung_up:
            await _respond(send, 202, b"")
        reporter.keep_alive()
        _keep(self._finishing, asyncio.get_running_loop().create_task(_finish(work, job, reporter, callbacks)))

    def _http_client(self) -> httpx.AsyncClient:
        if self._client is None:
            # Created on first use, inside the server's event loop; closed by shutdown().
            self._client = httpx.AsyncClient(timeout=self._callback_timeout, follow_redirects=False)
        return self._client


async def _finish(work: asyncio.Task[Any], job: Job, reporter: Reporter, callbacks: Callbacks) -> None:
    await asyncio.wait({work})
    outcome = outcome_of(work, job.execution_id)
    await reporter.close()  # the logs and the last progress land before the outcome
    await callbacks.complete(completion_body(outcome))


async def _call(handle: Handle, job: Job, ctx: Context) -> Any:
    result = handle(job, ctx)
    if inspect.isawaitable(result):
        result = await result
    return result


def _keep(tasks: set[asyncio.Task[Any]], task: asyncio.Task[Any]) -> None:
    tasks.add(task)
    task.add_done_callback(tasks.discard)


def _json(body: bytes) -> Any:
    try:
        return loads(body)
    except ValueError as exc:
        raise NotADispatch(f"the body is not JSON: {exc}") from exc


async def _read_body(receive: Receive) -> bytes | None:
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            break
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > MAX_BODY_BYTES:
            return None
        chunks.append(chunk)
        if not message.get("more_body", False):
            break
    return b"".join(chunks)


async def _disconnected(receive: Receive) -> None:
    """Returns when the caller hangs up (the only message left once the body is read)."""
    while (await receive())["type"] != "http.disconnect":
        pass


async def _respond(send: Send, status: int, body: bytes, headers: list[tuple[bytes, bytes]] | None = None) -> None:
    content_type = b"application/problem+json" if status >= 400 else b"application/json"
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", content_type), (b"content-length", str(len(body)).encode()),
                            *(headers or [])]})
    await send({"type": "http.response.body", "body": body})
