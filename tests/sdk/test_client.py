"""The SDK's clients against a live Jobwire (real server, real database). Every test runs twice,
with JobwireClient and with AsyncJobwireClient (tests/sdk/conftest.py): the two must behave the
same, call for call. Retries are proved on real sockets: a port nobody listens on, a listener
that hangs up, a server answering 503 with Retry-After, and a proxy that loses Jobwire's reply."""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from uuid import uuid4

import httpx
import pytest
from aiohttp import web

import jobwire
from jobwire import Execution, ProblemError, Unavailable
from jobwire._retry import parse_retry_after
from tests.conftest import free_port
from tests.sdk.conftest import Live, MakeClient

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "enqueue_and_wait.py"


async def failing(_: web.Request, job: dict[str, Any]) -> web.StreamResponse:
    return web.json_response({"error": "boom"}, status=500)


async def logging_three(_: web.Request, job: dict[str, Any]) -> web.StreamResponse:
    """Writes three log entries through the callback, then succeeds."""
    callback = job["callback"]
    entries = [{"level": "INFO", "message": f"line {i}"} for i in range(3)]
    async with httpx.AsyncClient() as http:
        response = await http.post(f"{callback['url']}/logs", json={"entries": entries},
                                   headers={"authorization": f"Bearer {callback['token']}"})
        response.raise_for_status()
    return web.json_response({"result": "logged"})


# --- handlers ------------------------------------------------------------------------------

async def test_put_handler_shows_the_secret_on_create_only_then_get_list_and_delete(live: Live, client):
    url = live.handler.route("/other", failing)
    created = await client.put_handler("other", url, timeout_seconds=5)
    assert created["secret"].startswith("whsec_") and created["timeout_seconds"] == 5
    replaced = await client.put_handler("other", url, timeout_seconds=6)
    assert "secret" not in replaced or replaced["secret"] is None
    assert (await client.get_handler("other"))["timeout_seconds"] == 6
    assert {h["name"] for h in await client.list_handlers()} == {"echo", "other"}
    assert await client.delete_handler("other") is None
    with pytest.raises(ProblemError) as refused:
        await client.get_handler("other")
    assert refused.value.status == 404


async def test_handler_secrets_are_added_and_deleted(client):
    rotated = await client.add_handler_secret("echo", expire_others_after_seconds=60)
    assert rotated["secret"].startswith("whsec_") and rotated["id"]
    spare = await client.add_handler_secret("echo")
    assert await client.delete_handler_secret("echo", rotated["id"]) is None
    with pytest.raises(ProblemError) as last:
        await client.delete_handler_secret("echo", spare["id"])  # the one left that does not expire
    assert last.value.status == 409


# --- jobs and executions -------------------------------------------------------------------

async def test_enqueue_then_wait_gives_the_succeeded_execution_with_attribute_access(client):
    enqueued = await client.enqueue("echo", {"hello": "world", "big": 2**70}, priority=3,
                                    metadata={"who": "sdk"})
    assert isinstance(enqueued, Execution) and enqueued.state == "ENQUEUED" and not enqueued.is_terminal
    done = await client.wait(enqueued.id, timeout=10)
    assert (done.id, done.state, done.attempt, done.priority) == (enqueued.id, "SUCCEEDED", 0, 3)
    assert done.result == {"hello": "world", "big": 2**70}  # integers keep every digit
    assert done.is_terminal and done.error_type is None and done.last_error is None
    assert isinstance(done.completed_at, datetime) and done.completed_at.tzinfo is not None
    assert done.raw["state"] == "SUCCEEDED" and done.metadata == {"who": "sdk"}
    assert (await client.get(enqueued.id)).state == "SUCCEEDED"
    [attempt] = await client.attempts(enqueued.id)
    assert attempt["state"] == "SUCCEEDED" and attempt["attempt"] == 0
    assert [e["type"] for e in await client.events(enqueued.id)] == ["execution.succeeded"]


def test_a_field_a_newer_server_adds_is_an_attribute_too():
    execution = Execution.from_json({"id": "e1", "state": "DEAD_LETTER", "attempt": 4, "blockers": ["rate_limit"]})
    assert (execution.id, execution.attempt, execution.blockers) == ("e1", 4, ["rate_limit"])
    assert execution.is_terminal and execution.raw["blockers"] == ["rate_limit"]
    with pytest.raises(AttributeError):
        execution.nothing_like_this  # noqa: B018


async def test_an_idempotency_key_given_as_a_field_returns_the_first_execution(client):
    first = await client.enqueue("echo", {"n": 1}, idempotency_key="order-1")
    again = await client.enqueue("echo", {"n": 1}, idempotency_key="order-1")
    assert again.id == first.id
    with pytest.raises(ProblemError) as conflict:
        await client.enqueue("echo", {"n": 2}, idempotency_key="order-1")
    assert conflict.value.status == 422


async def test_enqueue_takes_datetimes_and_uuids_and_a_traceparent(client):
    ref = uuid4()
    trace = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
    run_at = datetime.now().astimezone() + timedelta(hours=1)
    later = await client.enqueue("echo", {"ref": ref}, run_at=run_at, traceparent=trace)
    assert later.payload == {"ref": str(ref)} and later.state == "ENQUEUED"
    assert abs((later.scheduled_at - run_at).total_seconds()) < 0.01
    assert later.metadata == {"context": {"traceparent": trace}}


async def test_enqueue_batch_returns_executions_in_order_each_with_its_own_key(client):
    jobs = [{"handler": "echo", "payload": {"i": i}} for i in range(3)]
    jobs.append({"handler": "echo", "payload": {"i": 3}, "idempotency_key": "batch-3"})
    executions = await client.enqueue_batch(jobs)
    assert [e.payload["i"] for e in executions] == [0, 1, 2, 3] and len({e.id for e in executions}) == 4
    [again] = await client.enqueue_batch([jobs[3]])
    assert again.id == executions[3].id
    for execution in executions:
        assert (await client.wait(execution.id, timeout=10)).result == execution.payload


async def test_list_follows_next_cursor_across_pages_with_filters(client):
    ids = [(await client.enqueue("echo", {"i": i}, queue="paged", delay_seconds=3600)).id for i in range(7)]
    await client.enqueue("echo", queue="elsewhere", delay_seconds=3600)
    listed = await client.list(queue="paged", limit=3)  # three pages: 3, 3 and 1
    assert [e.id for e in listed] == ids[::-1]  # newest first
    assert await client.list(queue="paged", state="SUCCEEDED") == []


async def test_an_invalid_job_raises_problem_error_naming_the_field(client):
    with pytest.raises(ProblemError) as refused:
        await client.enqueue("echo", priority=2**40)
    assert refused.value.status == 422 and refused.value.fields == ["priority"]
    assert refused.value.title and refused.value.detail and refused.value.body["status"] == 422
    with pytest.raises(ProblemError) as batch:
        await client.enqueue_batch([{"handler": "echo"}, {"handler": "nobody"}])
    assert batch.value.status == 422 and batch.value.fields == ["jobs[1].handler"]
    assert not isinstance(batch.value, Unavailable)


async def test_an_unknown_execution_raises_a_404_problem(client):
    with pytest.raises(ProblemError) as missing:
        await client.get(uuid4())
    assert missing.value.status == 404 and missing.value.errors == []


async def test_the_api_key_is_sent_as_a_bearer_token(jobwire, make_client: MakeClient):
    server = await jobwire(api_keys=["key-one"])
    assert await make_client(server.url, api_key="key-one").list_handlers() == []
    for wrong in ("key-two", None):
        with pytest.raises(ProblemError) as refused:
            await make_client(server.url, api_key=wrong).list_handlers()
        assert refused.value.status == 401


async def test_cancel_retry_and_delete_move_an_execution_through_its_states(client):
    waiting = await client.enqueue("echo", {"x": 1}, delay_seconds=3600)
    cancelled = await client.cancel(waiting.id)
    assert cancelled.state == "CANCELLED" and (await client.wait(waiting.id)).state == "CANCELLED"
    with pytest.raises(ProblemError) as again:
        await client.cancel(waiting.id)
    assert again.value.status == 409
    retried = await client.retry(waiting.id)
    assert retried.state == "ENQUEUED" and retried.attempt == 1
    assert (await client.wait(waiting.id, timeout=10)).state == "SUCCEEDED"
    assert await client.delete(waiting.id) is None
    with pytest.raises(ProblemError) as gone:
        await client.get(waiting.id)
    assert gone.value.status == 404


async def test_a_failing_handler_dead_letters_with_every_attempt_recorded(live: Live, client):
    await client.put_handler("failing", live.handler.route("/failing", failing))
    execution = await client.enqueue("failing", max_attempts=2)
    dead = await client.wait(execution.id, timeout=10)
    assert dead.state == "DEAD_LETTER" and dead.error_type == "http_status" and "500" in dead.last_error
    assert [a["state"] for a in await client.attempts(execution.id)] == ["FAILED", "FAILED"]


async def test_wait_raises_timeout_error_when_the_execution_stays_unfinished(client):
    later = await client.enqueue("echo", delay_seconds=3600)
    started = time.monotonic()
    with pytest.raises(TimeoutError):
        await client.wait(later.id, timeout=0.4)
    assert time.monotonic() - started < 3


async def test_logs_follow_next_cursor(live: Live, client):
    await client.put_handler("logger", live.handler.route("/logger", logging_three))
    execution = await client.enqueue("logger")
    assert (await client.wait(execution.id, timeout=10)).result == "logged"
    entries = await client.logs(execution.id, limit=2)
    assert [e["message"] for e in entries] == ["line 0", "line 1", "line 2"]
    assert {e["attempt"] for e in entries} == {0}


async def test_bulk_actions_cancel_retry_and_delete_a_selection(client):
    ids = [(await client.enqueue("echo", delay_seconds=3600, queue="bulk")).id for _ in range(3)]
    assert await client.bulk_cancel(queue="bulk") == {"matched": 3, "changed": 3, "more": False}
    assert (await client.bulk_retry(ids=ids[:1]))["changed"] == 1
    assert (await client.wait(ids[0], timeout=10)).state == "SUCCEEDED"
    assert (await client.bulk_delete(queue="bulk"))["changed"] == 3
    assert await client.list(queue="bulk") == []


# --- schedules, queues, nodes ---------------------------------------------------------------

async def test_schedules_are_declared_previewed_triggered_and_deleted(client):
    declared = await client.put_schedule("nightly", "0 0 3 * * *", "echo", timezone="Europe/Berlin",
                                         payload={"report": True}, enabled=False)
    assert declared["job_id"] == "nightly" and declared["enabled"] is False
    assert (await client.get_schedule("nightly"))["cron"] == "0 0 3 * * *"
    assert [s["job_id"] for s in await client.list_schedules()] == ["nightly"]
    instants = await client.preview("nightly", count=3)
    assert len(instants) == 3 and instants == sorted(instants) and all(i.tzinfo for i in instants)
    fired = await client.trigger("nightly")
    assert fired.job_type == "CRON" and fired.job_id == "nightly"
    assert (await client.wait(fired.id, timeout=10)).result == {"report": True}
    with pytest.raises(ProblemError) as invalid:
        await client.put_schedule("broken", "not cron", "echo")
    assert invalid.value.status == 422 and invalid.value.fields == ["cron"]
    assert await client.delete_schedule("nightly") is None
    assert await client.list_schedules() == []


async def test_a_paused_queue_holds_its_jobs_until_resumed(client):
    paused = await client.pause("held")
    assert paused["name"] == "held" and paused["paused"] is True
    execution = await client.enqueue("echo", queue="held")
    await asyncio.sleep(0.5)
    assert (await client.get(execution.id)).state == "ENQUEUED"
    [queue] = [q for q in await client.queues() if q["name"] == "held"]
    assert queue["paused"] is True and queue["counts"]["ENQUEUED"] == 1
    assert (await client.resume("held"))["paused"] is False
    assert (await client.wait(execution.id, timeout=10)).state == "SUCCEEDED"


async def test_nodes_lists_the_live_server(client):
    [node] = await client.nodes()
    assert node["server_id"].startswith("test-")


# --- retries, on real sockets -----------------------------------------------------------------

@dataclass
class Scripted:
    """A real HTTP server answering each request with the next of `replies` (the last repeats),
    recording when each came and its headers and body."""

    url: str
    replies: list[web.Response]
    seen: list[tuple[float, dict[str, str], bytes]] = field(default_factory=list)


@pytest.fixture
async def scripted() -> AsyncIterator[Any]:
    runners: list[web.AppRunner] = []

    async def start(*replies: tuple[int, dict[str, str], Any]) -> Scripted:
        port = free_port()
        server = Scripted(f"http://127.0.0.1:{port}", [])

        async def answer(request: web.Request) -> web.Response:
            server.seen.append((time.monotonic(), dict(request.headers), await request.read()))
            status, headers, body = replies[min(len(server.seen), len(replies)) - 1]
            return web.json_response(body, status=status, headers=headers,
                                     content_type="application/problem+json" if status >= 400 else "application/json")

        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", answer)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        await web.TCPSite(runner, "127.0.0.1", port).start()
        runners.append(runner)
        return server

    yield start
    for runner in runners:
        await runner.cleanup()


BUSY = (503, {"retry-after": "1"}, {"type": "about:blank", "title": "Service Unavailable", "status": 503,
                                    "detail": "send it again"})
ENQUEUED = (201, {}, {"id": "0193b0a0-0000-7000-8000-000000000000", "state": "ENQUEUED", "attempt": 0})


async def test_a_503_is_retried_after_its_retry_after_with_the_same_idempotency_key(scripted, make_client):
    server = await scripted(BUSY, ENQUEUED)
    client = make_client(server.url, api_key="k-1")
    execution = await client.enqueue("echo", {"n": 1})
    assert execution.state == "ENQUEUED" and len(server.seen) == 2
    (first, headers, body), (second, _, body_again) = server.seen
    assert second - first >= 0.95  # Retry-After: 1, not the 50 ms backoff
    sent = json.loads(body)
    assert sent["idempotency_key"].startswith("sdk-") and json.loads(body_again) == sent
    assert headers["Authorization"] == "Bearer k-1"
    assert headers["User-Agent"] == f"jobwire-sdk/{jobwire.__version__}"


async def test_503_on_every_try_raises_unavailable_with_the_problem(scripted, make_client):
    server = await scripted((503, {}, BUSY[2]))
    client = make_client(server.url, retries=jobwire.Retries(attempts=3, base_delay=0.01))
    with pytest.raises(Unavailable) as unavailable:
        await client.get(uuid4())
    assert isinstance(unavailable.value, ProblemError)
    assert (unavailable.value.status, unavailable.value.detail) == (503, "send it again")
    assert len(server.seen) == 3


async def test_a_request_that_must_not_repeat_is_not_retried_after_a_503(scripted, make_client):
    server = await scripted(BUSY, ENQUEUED)
    with pytest.raises(Unavailable):
        await make_client(server.url).cancel(uuid4())
    assert len(server.seen) == 1


async def test_nothing_listening_raises_unavailable_after_bounded_tries(make_client):
    client = make_client(f"http://127.0.0.1:{free_port()}", retries=jobwire.Retries(attempts=4, base_delay=0.05))
    started = time.monotonic()
    with pytest.raises(Unavailable) as unavailable:
        await client.enqueue("echo")
    assert time.monotonic() - started < 2  # three backoffs of at most 50, 100 and 200 ms
    assert unavailable.value.status is None and isinstance(unavailable.value.__cause__, httpx.ConnectError)
    assert "4 tries" in unavailable.value.detail


async def test_a_base_url_without_a_scheme_is_a_mistake_not_an_outage(make_client):
    with pytest.raises(httpx.UnsupportedProtocol):
        await make_client("127.0.0.1:8000").list_handlers()


def test_retry_after_is_read_as_seconds_or_an_http_date():
    now = datetime(2026, 12, 1, 12, 0, 0, tzinfo=UTC)
    assert parse_retry_after("5", now) == 5.0
    assert parse_retry_after("Tue, 01 Dec 2026 12:00:07 GMT", now) == 7.0
    assert parse_retry_after("Tue, 01 Dec 2026 11:00:00 GMT", now) == 0.0  # already past
    assert parse_retry_after("soon", now) is None and parse_retry_after(None, now) is None
    policy = jobwire.Retries(attempts=3, max_retry_after=30.0, random=lambda: 1.0)
    busy = httpx.Response(503, headers={"retry-after": "3600"})
    assert policy.delay(0, busy, repeatable=True) == 30.0  # capped
    assert policy.delay(0, busy, repeatable=False) is None
    assert policy.delay(2, busy, repeatable=True) is None  # the third try was the last
    assert policy.delay(1, httpx.ConnectError("refused"), repeatable=False) == 0.5  # nothing was sent


@pytest.fixture
async def hang_up() -> AsyncIterator[Any]:
    """A listener that accepts each connection, reads the request and closes without a reply."""
    accepted: list[int] = []

    async def accept(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        accepted.append(1)
        await reader.read(65536)
        writer.close()

    port = free_port()
    listener = await asyncio.start_server(accept, "127.0.0.1", port)
    yield f"http://127.0.0.1:{port}", accepted
    listener.close()


async def test_a_lost_reply_is_retried_only_for_requests_safe_to_repeat(hang_up, make_client):
    url, accepted = hang_up
    client = make_client(url)
    with pytest.raises(Unavailable):
        await client.get(uuid4())
    assert len(accepted) == 4  # a GET: every try
    with pytest.raises(Unavailable):
        await client.retry(uuid4())
    assert len(accepted) == 5  # a retry of a retry could retry twice: one try


class ReplyLosingProxy:
    """A TCP proxy in front of Jobwire that, on its first connection, forwards the request and
    hangs up on the client as soon as Jobwire's reply starts: the job is committed, the client
    never hears so. Later connections are piped both ways."""

    def __init__(self, upstream_port: int) -> None:
        self.upstream_port = upstream_port
        self.port = free_port()
        self.connections = 0

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._accept, "127.0.0.1", self.port)

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
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

    def close(self) -> None:
        self._server.close()


async def test_a_retried_enqueue_whose_first_reply_was_lost_makes_one_execution(live: Live, client, make_client):
    proxy = ReplyLosingProxy(live.server.settings.port)
    await proxy.start()
    try:
        execution = await make_client(f"http://127.0.0.1:{proxy.port}").enqueue("echo", {"once": True},
                                                                                  queue="lossy")
    finally:
        proxy.close()
    assert proxy.connections == 2  # the lost reply, then the retry
    [stored] = await client.list(queue="lossy")
    assert stored.id == execution.id


async def test_without_retries_the_lost_reply_raises_but_the_job_exists(live: Live, client, make_client):
    proxy = ReplyLosingProxy(live.server.settings.port)
    await proxy.start()
    try:
        with pytest.raises(Unavailable):
            await make_client(f"http://127.0.0.1:{proxy.port}", retries=jobwire.Retries(attempts=1)).enqueue(
                "echo", queue="lost")
    finally:
        proxy.close()
    assert len(await client.list(queue="lost")) == 1  # what the generated key protects against


# --- the example ----------------------------------------------------------------------------------

async def test_the_enqueue_and_wait_example_prints_the_result(live: Live):
    process = await asyncio.create_subprocess_exec(
        sys.executable, str(EXAMPLE), "--url", live.url, "--handler", "echo", "--payload", '{"hello": "world"}',
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    out, err = await asyncio.wait_for(process.communicate(), timeout=60)
    assert process.returncode == 0, err.decode()
    lines = out.decode().splitlines()
    assert lines[-1] == '{"hello": "world"}' and "SUCCEEDED" in out.decode()
