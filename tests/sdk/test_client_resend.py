"""Behaviour 4: the SDK resends only what is safe to resend.

After a reply that may have been lost (the request went out, then the connection dropped), a
request is sent again only when doing it twice does no more than once; the others raise
`Unavailable` with `maybe_applied`, saying how to find out what happened. Every operation of the
table (`jobwire._resend.RESEND`) is tried against a listener that reads each request and hangs up
(the client side is real: its own sockets, its own httpx), with both clients; then the classes
that matter most are tried against a real node behind a proxy that loses Jobwire's first reply,
the change committed."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any
from uuid import uuid4

import pytest

import jobwire
from jobwire import BulkResult, Debounce, Unavailable
from jobwire._resend import RESEND
from tests.conftest import free_port, reply_result
from tests.sdk.conftest import Live, MakeClient

QUICK = jobwire.Retries(attempts=3, base_delay=0.001, max_delay=0.002)
ID = str(uuid4())

# operationId (with how its request is made) → a call on the client, and whether it is resent.
Call = Callable[[Any], Awaitable[Any]]
CALLS: dict[str, tuple[Call, bool]] = {
    "putHandler": (lambda c: c.handlers.put("h", "http://127.0.0.1:9/"), False),
    "getHandler": (lambda c: c.handlers.get("h"), True),
    "listHandlers": (lambda c: c.handlers.list(), True),
    "deleteHandler": (lambda c: c.handlers.delete("h"), True),
    "addHandlerSecret": (lambda c: c.handlers.add_secret("h"), False),
    "deleteHandlerSecret": (lambda c: c.handlers.delete_secret("h", ID), True),
    "listHandlerKeys": (lambda c: c.handlers.keys("h", state="throttled"), True),
    "pauseHandlerKey": (lambda c: c.handlers.pause_key("h", "customer:42"), True),
    "resumeHandlerKey": (lambda c: c.handlers.resume_key("h", "customer:42"), True),
    "enqueueJob": (lambda c: c.jobs.enqueue("h"), True),
    "enqueueJob with debounce": (lambda c: c.jobs.enqueue("h", debounce=Debounce(key="k", delay_seconds=5)), False),
    "enqueueJobs": (lambda c: c.jobs.enqueue_batch([{"handler": "h"}]), True),
    "createWorkflow": (lambda c: c.workflows.create([{"ref": "a", "handler": "h"}], name="w"), True),
    "addWorkflowJobs": (lambda c: c.workflows.add_jobs(ID, [{"ref": "b", "handler": "h", "depends_on": ["a"]}]),
                        False),
    "getWorkflow": (lambda c: c.workflows.get(ID), True),
    "listWorkflows": (lambda c: c.workflows.list(state="FAILED", name="w"), True),
    "listWorkflowJobs": (lambda c: c.workflows.jobs(ID, state="WAITING"), True),
    "cancelWorkflow": (lambda c: c.workflows.cancel(ID), False),
    "retryWorkflow": (lambda c: c.workflows.retry(ID), False),
    "getExecution": (lambda c: c.executions.get(ID), True),
    "listExecutions": (lambda c: c.executions.list(queue="q"), True),
    "listExecutionLogs": (lambda c: c.executions.logs(ID), True),
    "listExecutionAttempts": (lambda c: c.executions.attempts(ID), True),
    "listExecutionEvents": (lambda c: c.executions.events(ID), True),
    "listExecutionBlockers": (lambda c: c.executions.blockers(ID), True),
    "deleteExecution": (lambda c: c.executions.delete(ID), True),
    "cancelExecution": (lambda c: c.executions.cancel(ID), False),
    "retryExecution": (lambda c: c.executions.retry(ID), False),
    "sendSignal": (lambda c: c.executions.signal(ID, "approved", {"by": "ana"}), False),
    "listSignals": (lambda c: c.executions.signals(ID, limit=10), True),
    "bulkRetryExecutions by filter": (lambda c: c.executions.bulk_retry(queue="q"), False),
    "bulkRetryExecutions by ids": (lambda c: c.executions.bulk_retry(ids=[ID]), False),
    "bulkCancelExecutions by filter": (lambda c: c.executions.bulk_cancel(state="ENQUEUED"), False),
    "bulkCancelExecutions by ids": (lambda c: c.executions.bulk_cancel(ids=[ID], queue="q"), True),
    "bulkDeleteExecutions by filter": (lambda c: c.executions.bulk_delete(handler="h"), False),
    "bulkDeleteExecutions by ids": (lambda c: c.executions.bulk_delete(ids=[ID]), True),
    "bulkRetryExecutions dry run": (lambda c: c.executions.bulk_retry(queue="q", dry_run=True), True),
    "bulkCancelExecutions dry run": (lambda c: c.executions.bulk_cancel(state="ENQUEUED", dry_run=True), True),
    "bulkDeleteExecutions dry run": (lambda c: c.executions.bulk_delete(handler="h", dry_run=True), True),
    "listEvents": (lambda c: c.events.page(types=["execution.cancelled"], queue="q"), True),
    "listEvents followed to the end": (lambda c: c.events.list("cursor", handler="h"), True),
    "streamEvents": (lambda c: c.events.stream("cursor", types=["execution.cancelled"], handler="h"), True),
    "putSubscription": (lambda c: c.subscriptions.put("s", "http://127.0.0.1:9/", types=["execution.failed"]),
                        False),
    "getSubscription": (lambda c: c.subscriptions.get("s"), True),
    "listSubscriptions": (lambda c: c.subscriptions.list(), True),
    "deleteSubscription": (lambda c: c.subscriptions.delete("s"), True),
    "addSubscriptionSecret": (lambda c: c.subscriptions.add_secret("s"), False),
    "deleteSubscriptionSecret": (lambda c: c.subscriptions.delete_secret("s", ID), True),
    "listSubscriptionDeliveries": (lambda c: c.subscriptions.deliveries("s", status="dead"), True),
    "resendDelivery": (lambda c: c.subscriptions.resend("s", 7), False),
    "recoverSubscription": (lambda c: c.subscriptions.recover("s", "2026-12-01T00:00:00Z"), True),
    "putSchedule": (lambda c: c.schedules.put("s", "* * * * *", "h"), True),
    "getSchedule": (lambda c: c.schedules.get("s"), True),
    "listSchedules": (lambda c: c.schedules.list(), True),
    "deleteSchedule": (lambda c: c.schedules.delete("s"), True),
    "triggerSchedule": (lambda c: c.schedules.trigger("s"), False),
    "previewSchedule": (lambda c: c.schedules.preview("s"), True),
    "listQueues": (lambda c: c.queues.list(), True),
    "pauseQueue": (lambda c: c.queues.pause("q"), True),
    "resumeQueue": (lambda c: c.queues.resume("q"), True),
    "listNodes": (lambda c: c.nodes.list(), True),
    "createApiKey": (lambda c: c.api_keys.create("k", ["read"]), False),
    "listApiKeys": (lambda c: c.api_keys.list(), True),
    "deleteApiKey": (lambda c: c.api_keys.delete(ID), True),
    "health": (lambda c: c.health(), True),
    "readiness": (lambda c: c.readiness(), True),
    "metrics": (lambda c: c.metrics(), True),
}


def test_every_operation_of_the_resend_table_is_tried_here():
    assert {name.split(" ")[0] for name in CALLS} == set(RESEND)


@pytest.fixture
async def hang_up() -> AsyncIterator[tuple[str, list[bytes]]]:
    """A listener that accepts each connection, reads the request and closes without a reply."""
    requests: list[bytes] = []

    async def accept(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        requests.append(await reader.read(65536))
        writer.close()

    port = free_port()
    listener = await asyncio.start_server(accept, "127.0.0.1", port)
    yield f"http://127.0.0.1:{port}", requests
    listener.close()


async def test_after_a_lost_reply_only_requests_safe_to_repeat_are_sent_again(hang_up, make_client: MakeClient):
    url, requests = hang_up
    client = make_client(url, retries=QUICK)
    for name, (call, resent) in CALLS.items():
        requests.clear()
        with pytest.raises(Unavailable) as lost:
            await call(client)
        assert lost.value.status is None, name
        if resent:
            assert len(requests) == QUICK.attempts, name
            assert not lost.value.maybe_applied and "safe to send again" in lost.value.detail, name
        else:
            assert len(requests) == 1, name
            assert lost.value.maybe_applied and lost.value.title == "Outcome unknown", name
            assert "may or may not have applied it" in lost.value.detail, name
        assert requests[0].split(b" ")[0] in (b"GET", b"PUT", b"POST", b"DELETE"), name  # it went out


async def test_the_handler_put_says_how_to_recover_its_secret(hang_up, make_client: MakeClient):
    url, _ = hang_up
    with pytest.raises(Unavailable) as lost:
        await make_client(url).handlers.put("mailer", "http://127.0.0.1:9/mail")
    said = str(lost.value)
    assert said.startswith("Outcome unknown: PUT /v1/handlers/mailer: the connection failed after the request")
    assert "GET /v1/handlers/mailer (client.handlers.get)" in said
    assert "add one with POST /v1/handlers/mailer/secrets (client.handlers.add_secret)" in said


async def test_the_subscription_put_and_resend_say_how_to_find_out(hang_up, make_client: MakeClient):
    url, _ = hang_up
    client = make_client(url)
    with pytest.raises(Unavailable) as lost:
        await client.subscriptions.put("audit", "http://127.0.0.1:9/events")
    said = str(lost.value)
    assert said.startswith("Outcome unknown: PUT /v1/subscriptions/audit: the connection failed after the request")
    assert "add one with POST /v1/subscriptions/audit/secrets (client.subscriptions.add_secret)" in said
    with pytest.raises(Unavailable) as lost:
        await client.subscriptions.resend("audit", 42)
    assert "refused (409) while a node sends the first" in str(lost.value)
    assert "if delivery 42 was tried after your request" in str(lost.value)


# --- against a real node, behind a proxy that loses Jobwire's first reply ----------------------

class ReplyLosingProxy:
    """A TCP proxy in front of Jobwire that, on its first connection, forwards the request and
    hangs up on the client as soon as Jobwire's reply starts: the change is committed, the client
    never hears so. Later connections are piped both ways."""

    def __init__(self, upstream_port: int) -> None:
        self.upstream_port = upstream_port
        self.port = free_port()
        self.connections = 0
        self._tasks: set[asyncio.Task[Any]] = set()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._accept, "127.0.0.1", self.port)

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._tasks.add(asyncio.current_task())
        self.connections += 1
        lose_reply = self.connections == 1
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.upstream_port)
        upstream = asyncio.create_task(self._pipe(reader, up_writer))
        try:
            while data := await up_reader.read(65536):
                if lose_reply:
                    break
                writer.write(data)
                await writer.drain()
        finally:
            writer.close()
            up_writer.close()
            upstream.cancel()

    @staticmethod
    async def _pipe(source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
        with contextlib.suppress(OSError, ConnectionError):
            while data := await source.read(65536):
                sink.write(data)
                await sink.drain()

    async def stop(self) -> None:
        """Stops listening and ends the connections still piped (a client's kept-alive one)."""
        self._server.close()
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)


@pytest.fixture
async def proxy(live: Live) -> AsyncIterator[ReplyLosingProxy]:
    losing = ReplyLosingProxy(live.server.settings.port)
    await losing.start()
    yield losing
    await losing.stop()


async def test_a_retried_enqueue_whose_first_reply_was_lost_makes_one_execution(proxy, client, make_client):
    execution = await make_client(proxy.url).jobs.enqueue("echo", {"once": True}, queue="lossy")
    assert proxy.connections == 2  # the lost reply, then the retry
    [stored] = await client.executions.list(queue="lossy")
    assert stored.id == execution.id


async def test_without_retries_the_lost_reply_raises_but_the_job_exists(proxy, client, make_client):
    with pytest.raises(Unavailable):
        await make_client(proxy.url, retries=jobwire.Retries(attempts=1)).jobs.enqueue("echo", queue="lost")
    assert len(await client.executions.list(queue="lost")) == 1  # what the generated key protects against


async def test_a_debounced_enqueue_whose_reply_was_lost_is_not_sent_again_and_its_advice_works(
        proxy, client, make_client):
    debounce = Debounce(key="reindex:42", delay_seconds=3600)
    first = await client.jobs.enqueue("echo", {"v": 1}, debounce=debounce)
    with pytest.raises(Unavailable) as lost:
        await make_client(proxy.url).jobs.enqueue("echo", {"v": 2}, debounce=debounce)
    assert lost.value.maybe_applied and proxy.connections == 1
    assert 'client.executions.list(handler="echo")' in str(lost.value)
    # As the message says: the handler's ENQUEUED execution holds the payload, so it took the enqueue.
    [waiting] = await client.executions.list(handler="echo", state="ENQUEUED")
    assert (waiting.id, waiting.payload) == (first.id, {"v": 2})


async def test_a_handler_put_whose_reply_was_lost_is_not_sent_again_and_its_advice_works(
        live: Live, proxy, client, make_client):
    url = live.handler.route("/fresh", reply_result)
    with pytest.raises(Unavailable) as lost:
        await make_client(proxy.url).handlers.put("fresh", url)
    assert lost.value.maybe_applied and proxy.connections == 1
    # As the message says: the handler exists, and a new secret is the way to one it can verify.
    assert (await client.handlers.get("fresh")).url == url
    secret = await client.handlers.add_secret("fresh")
    assert secret.secret.startswith("whsec_")


async def test_a_workflow_created_again_after_its_first_reply_was_lost_is_made_once(proxy, client, make_client):
    jobs = [{"ref": "fetch", "handler": "echo", "delay_seconds": 3600},
            {"ref": "report", "handler": "echo", "depends_on": ["fetch"]}]
    made = await make_client(proxy.url).workflows.create(jobs, name="lossy")
    assert proxy.connections == 2  # the lost reply, then the retry with the same generated key
    assert [w.id for w in await client.workflows.list(name="lossy")] == [made.id]
    assert [(i.ref, i.state) for i in made.items] == [("fetch", "ENQUEUED"), ("report", "WAITING")]


async def test_a_workflow_cancel_whose_reply_was_lost_is_not_sent_again_and_its_advice_works(
        proxy, client, make_client):
    made = await client.workflows.create([{"ref": "a", "handler": "echo", "delay_seconds": 3600}])
    with pytest.raises(Unavailable) as lost:
        await make_client(proxy.url).workflows.cancel(made.id)
    assert lost.value.maybe_applied and proxy.connections == 1
    assert f"client.workflows.get {made.id}" in str(lost.value)
    assert (await client.workflows.get(made.id)).state == "CANCELLED"  # as the message says: it was applied


async def test_a_signal_whose_reply_was_lost_is_not_sent_again_and_its_advice_works(proxy, client, make_client):
    later = await client.jobs.enqueue("echo", delay_seconds=3600)
    with pytest.raises(Unavailable) as lost:
        await make_client(proxy.url).executions.signal(later.id, "approved", {"by": "ana"})
    assert lost.value.maybe_applied and proxy.connections == 1
    assert f"client.executions.signals {later.id}" in str(lost.value)
    # As the message says: the signal listed is the lost request's, stored once.
    assert [(s.name, s.payload) for s in await client.executions.signals(later.id)] == [("approved", {"by": "ana"})]


async def test_a_bulk_cancel_by_filter_whose_reply_was_lost_is_not_sent_again(proxy, client, make_client):
    ids = [(await client.jobs.enqueue("echo", delay_seconds=3600, queue="by-filter")).id for _ in range(3)]
    with pytest.raises(Unavailable) as lost:
        await make_client(proxy.url).executions.bulk_cancel(queue="by-filter")
    assert lost.value.maybe_applied and proxy.connections == 1
    assert {(await client.executions.get(i)).state for i in ids} == {"CANCELLED"}  # applied, once


async def test_a_bulk_cancel_by_ids_whose_reply_was_lost_is_sent_again(proxy, client, make_client):
    ids = [(await client.jobs.enqueue("echo", delay_seconds=3600, queue="by-ids")).id for _ in range(2)]
    result = await make_client(proxy.url).executions.bulk_cancel(ids=ids)
    assert proxy.connections == 2
    assert isinstance(result, BulkResult) and result.changed == 0  # the second try's: the first cancelled them
    assert {(await client.executions.get(i)).state for i in ids} == {"CANCELLED"}


async def test_a_delete_whose_reply_was_lost_returns_as_if_it_had_been_answered(proxy, client, make_client):
    execution = await client.jobs.enqueue("echo", delay_seconds=3600)
    await client.executions.cancel(execution.id)
    assert await make_client(proxy.url).executions.delete(execution.id) is None  # the second try found it gone
    assert proxy.connections == 2
    with pytest.raises(jobwire.ProblemError) as gone:
        await client.executions.get(execution.id)
    assert gone.value.status == 404
