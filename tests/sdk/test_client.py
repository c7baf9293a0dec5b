"""The SDK's clients against a live Jobwire (real server, real database), resource by resource.
Every test runs twice, with JobwireClient and with AsyncJobwireClient (tests/sdk/conftest.py):
the two must behave the same, call for call, and give the same typed objects. Retries are proved
on real sockets: a port nobody listens on and servers answering 503 (what may be sent again after
a lost reply is tests/sdk/test_client_resend.py)."""

from __future__ import annotations

import asyncio
import json
import math
import re
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
from jobwire import (
    AdaptiveLimit,
    ApiKey,
    Attempt,
    Blocker,
    Blockers,
    BulkDryRun,
    BulkResult,
    Circuit,
    ConcurrencyKey,
    Debounce,
    Event,
    Execution,
    Handler,
    HandlerBatch,
    HandlerSecret,
    InvalidResponse,
    KeyRate,
    LogEntry,
    Node,
    Page,
    ProblemError,
    Queue,
    RateLimit,
    Schedule,
    Unavailable,
)
from tests.conftest import free_port, reply_result
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
    created = await client.handlers.put("other", url, timeout_seconds=5)
    assert isinstance(created, Handler) and created.secret and created.secret.startswith("whsec_")
    assert created.timeout_seconds == 5 and created.created_at.tzinfo is not None
    replaced = await client.handlers.put("other", url, timeout_seconds=6)
    assert replaced.secret is None
    shown = await client.handlers.get("other")
    assert (shown.timeout_seconds, shown.secret) == (6, None)
    assert [type(s) for s in shown.secrets] == [HandlerSecret] and shown.secrets[0].secret is None
    assert {h.name for h in await client.handlers.list()} == {"echo", "other"}
    assert await client.handlers.delete("other") is None
    with pytest.raises(ProblemError) as refused:
        await client.handlers.get("other")
    assert refused.value.status == 404


async def test_handler_secrets_are_added_and_deleted(client):
    rotated = await client.handlers.add_secret("echo", expire_others_after_seconds=60)
    assert isinstance(rotated, HandlerSecret) and rotated.secret.startswith("whsec_") and rotated.id
    spare = await client.handlers.add_secret("echo")
    listed = {s.id: s for s in (await client.handlers.get("echo")).secrets}
    assert {rotated.id, spare.id} <= set(listed) and all(s.secret is None for s in listed.values())
    assert await client.handlers.delete_secret("echo", rotated.id) is None
    with pytest.raises(ProblemError) as last:
        await client.handlers.delete_secret("echo", spare.id)  # the one left that does not expire
    assert last.value.status == 409


# --- jobs and executions -------------------------------------------------------------------

async def test_enqueue_then_wait_gives_the_succeeded_execution_as_typed_objects(client):
    enqueued = await client.jobs.enqueue("echo", {"hello": "world", "big": 2**70}, priority=3,
                                         metadata={"who": "sdk"})
    assert isinstance(enqueued, Execution) and enqueued.state == "ENQUEUED" and not enqueued.is_terminal
    done = await client.executions.wait(enqueued.id, timeout=10)
    assert (done.id, done.state, done.attempt, done.priority) == (enqueued.id, "SUCCEEDED", 0, 3)
    assert done.result == {"hello": "world", "big": 2**70}  # integers keep every digit
    assert done.is_terminal and done.error_type is None and done.last_error is None
    assert isinstance(done.completed_at, datetime) and done.completed_at.tzinfo is not None
    assert done.raw["state"] == "SUCCEEDED" and done.metadata == {"who": "sdk"}
    assert (await client.executions.get(enqueued.id)).state == "SUCCEEDED"
    [attempt] = await client.executions.attempts(enqueued.id)
    assert isinstance(attempt, Attempt) and (attempt.state, attempt.attempt, attempt.http_status) == (
        "SUCCEEDED", 0, 200)
    [event] = await client.executions.events(enqueued.id)
    assert isinstance(event, Event) and event.type == "execution.succeeded"
    assert (event.data.execution_id, event.data.new_state) == (enqueued.id, "SUCCEEDED")


async def test_an_idempotency_key_given_as_a_field_returns_the_first_execution(client):
    first = await client.jobs.enqueue("echo", {"n": 1}, idempotency_key="order-1")
    again = await client.jobs.enqueue("echo", {"n": 1}, idempotency_key="order-1")
    assert again.id == first.id
    with pytest.raises(ProblemError) as conflict:
        await client.jobs.enqueue("echo", {"n": 2}, idempotency_key="order-1")
    assert conflict.value.status == 422


async def test_enqueue_takes_datetimes_and_uuids_and_a_traceparent(client):
    ref = uuid4()
    trace = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
    run_at = datetime.now().astimezone() + timedelta(hours=1)
    later = await client.jobs.enqueue("echo", {"ref": ref}, run_at=run_at, traceparent=trace)
    assert later.payload == {"ref": str(ref)} and later.state == "ENQUEUED"
    assert abs((later.scheduled_at - run_at).total_seconds()) < 0.01
    assert later.metadata == {"context": {"traceparent": trace}}


async def test_nan_infinity_and_a_naive_datetime_are_refused_before_anything_is_sent(client):
    for payload, where in (({"amount": math.nan}, "payload.amount"), ([1, math.inf], "payload[1]")):
        with pytest.raises(ValueError, match=rf"^{re.escape(where)}: "):
            await client.jobs.enqueue("echo", payload)
    with pytest.raises(ValueError, match=r"^run_at: datetime .* has no time zone"):
        await client.jobs.enqueue("echo", run_at=datetime.now() + timedelta(hours=1))
    with pytest.raises(ValueError, match=r"^jobs\[1\]\.payload\.x"):
        await client.jobs.enqueue_batch([{"handler": "echo"}, {"handler": "echo", "payload": {"x": -math.inf}}])
    assert await client.executions.list() == []  # none reached the server


async def test_enqueue_batch_returns_executions_in_order_each_with_its_own_key(client):
    jobs = [{"handler": "echo", "payload": {"i": i}} for i in range(3)]
    jobs.append({"handler": "echo", "payload": {"i": 3}, "idempotency_key": "batch-3"})
    executions = await client.jobs.enqueue_batch(jobs)
    assert [e.payload["i"] for e in executions] == [0, 1, 2, 3] and len({e.id for e in executions}) == 4
    assert all(e.created for e in executions)
    [again] = await client.jobs.enqueue_batch([jobs[3]])
    assert again.id == executions[3].id and again.created is False
    for execution in executions:
        assert (await client.executions.wait(execution.id, timeout=10)).result == execution.payload


async def test_enqueue_batch_ids_returns_the_ids_alone_in_order(client):
    first = await client.jobs.enqueue("echo", {"i": 0}, idempotency_key="ids-0", delay_seconds=3600)
    ids = await client.jobs.enqueue_batch_ids([{"handler": "echo", "payload": {"i": 0}, "idempotency_key": "ids-0",
                                                "delay_seconds": 3600},
                                               {"handler": "echo", "payload": {"i": 1}, "delay_seconds": 3600}])
    assert len(ids) == 2 and ids[0] == first.id
    assert (await client.executions.get(ids[1])).payload == {"i": 1}


async def test_list_follows_next_cursor_across_pages_with_filters_and_page_gives_one(client):
    ids = [(await client.jobs.enqueue("echo", {"i": i}, queue="paged", delay_seconds=3600)).id for i in range(7)]
    await client.jobs.enqueue("echo", queue="elsewhere", delay_seconds=3600)
    listed = await client.executions.list(queue="paged", limit=3)  # three pages: 3, 3 and 1
    assert [e.id for e in listed] == ids[::-1]  # newest first
    assert await client.executions.list(queue="paged", state="SUCCEEDED") == []
    first = await client.executions.page(queue="paged", limit=5)
    assert isinstance(first, Page) and [e.id for e in first.items] == ids[:1:-1] and first.next_cursor
    rest = await client.executions.page(first.next_cursor, queue="paged", limit=5)
    assert [e.id for e in rest.items] == ids[1::-1] and rest.next_cursor is None


async def test_an_invalid_job_raises_problem_error_naming_the_field(client):
    with pytest.raises(ProblemError) as refused:
        await client.jobs.enqueue("echo", priority=2**40)
    assert refused.value.status == 422 and refused.value.fields == ["priority"]
    assert refused.value.title and refused.value.detail and refused.value.body["status"] == 422
    with pytest.raises(ProblemError) as batch:
        await client.jobs.enqueue_batch([{"handler": "echo"}, {"handler": "nobody"}])
    assert batch.value.status == 422 and batch.value.fields == ["jobs[1].handler"]
    assert not isinstance(batch.value, Unavailable)


async def test_an_unknown_execution_raises_a_404_problem(client):
    with pytest.raises(ProblemError) as missing:
        await client.executions.get(uuid4())
    assert missing.value.status == 404 and missing.value.errors == [] and missing.value.is_problem_document


async def test_the_api_key_is_sent_as_a_bearer_token(jobwire, make_client: MakeClient):
    server = await jobwire(api_keys=["key-one"])
    assert await make_client(server.url, api_key="key-one").handlers.list() == []
    for wrong in ("key-two", None):
        with pytest.raises(ProblemError) as refused:
            await make_client(server.url, api_key=wrong).handlers.list()
        assert refused.value.status == 401


async def test_cancel_retry_and_delete_move_an_execution_through_its_states(client):
    waiting = await client.jobs.enqueue("echo", {"x": 1}, delay_seconds=3600)
    cancelled = await client.executions.cancel(waiting.id)
    assert cancelled.state == "CANCELLED" and (await client.executions.wait(waiting.id)).state == "CANCELLED"
    with pytest.raises(ProblemError) as again:
        await client.executions.cancel(waiting.id)
    assert again.value.status == 409
    retried = await client.executions.retry(waiting.id)
    assert retried.state == "ENQUEUED" and retried.attempt == 1
    assert (await client.executions.wait(waiting.id, timeout=10)).state == "SUCCEEDED"
    assert await client.executions.delete(waiting.id) is None
    with pytest.raises(ProblemError) as gone:
        await client.executions.get(waiting.id)
    assert gone.value.status == 404


async def test_a_failing_handler_dead_letters_with_every_attempt_recorded(live: Live, client):
    await client.handlers.put("failing", live.handler.route("/failing", failing))
    execution = await client.jobs.enqueue("failing", max_attempts=2)
    dead = await client.executions.wait(execution.id, timeout=10)
    assert dead.state == "DEAD_LETTER" and dead.error_type == "http_status" and "500" in dead.last_error
    attempts = await client.executions.attempts(execution.id)
    assert [(a.attempt, a.state, a.http_status) for a in attempts] == [(0, "FAILED", 500), (1, "FAILED", 500)]
    assert [e.type for e in await client.executions.events(execution.id)] == [
        "execution.failed", "execution.failed", "execution.dead_lettered"]


async def test_wait_raises_timeout_error_when_the_execution_stays_unfinished(client):
    later = await client.jobs.enqueue("echo", delay_seconds=3600)
    with pytest.raises(TimeoutError, match="still ENQUEUED after 0.4 s"):
        await client.executions.wait(later.id, timeout=0.4)


async def test_logs_follow_next_cursor(live: Live, client):
    await client.handlers.put("logger", live.handler.route("/logger", logging_three))
    execution = await client.jobs.enqueue("logger")
    assert (await client.executions.wait(execution.id, timeout=10)).result == "logged"
    entries = await client.executions.logs(execution.id, limit=2)
    assert all(isinstance(e, LogEntry) for e in entries)
    assert [e.message for e in entries] == ["line 0", "line 1", "line 2"]
    assert {e.attempt for e in entries} == {0} and all(e.logged_at.tzinfo for e in entries)


async def test_bulk_actions_cancel_retry_and_delete_a_selection(client):
    ids = [(await client.jobs.enqueue("echo", delay_seconds=3600, queue="bulk")).id for _ in range(3)]
    cancelled = await client.executions.bulk_cancel(queue="bulk")
    assert isinstance(cancelled, BulkResult) and (cancelled.matched, cancelled.changed, cancelled.more) == (
        3, 3, False)
    assert (await client.executions.bulk_retry(ids=ids[:1])).changed == 1
    assert (await client.executions.wait(ids[0], timeout=10)).state == "SUCCEEDED"
    assert (await client.executions.bulk_delete(queue="bulk")).changed == 3
    assert await client.executions.list(queue="bulk") == []


async def test_a_bulk_dry_run_counts_and_changes_nothing(client):
    ids = [(await client.jobs.enqueue("echo", delay_seconds=3600, queue="dry")).id for _ in range(3)]
    found = await client.executions.bulk_cancel(queue="dry", dry_run=True)
    assert isinstance(found, BulkDryRun) and (found.matched, found.more) == (3, False)
    assert (await client.executions.bulk_cancel(queue="dry", limit=2, dry_run=True)).more is True
    assert {e.state for e in await client.executions.list(queue="dry")} == {"ENQUEUED"}
    assert (await client.executions.bulk_cancel(queue="dry", dry_run=False)).changed == 3
    assert (await client.executions.bulk_retry(ids=ids, dry_run=True)).matched == 3


async def test_listing_by_the_new_filters(client):
    keyed = await client.jobs.enqueue("echo", delay_seconds=3600, queue="found", metadata={"customer": "found-42"},
                                      concurrency_key="c-42", idempotency_key="found-1")
    await client.jobs.enqueue("echo", delay_seconds=3600, queue="found", metadata={"customer": "found-43"})
    assert [e.id for e in await client.executions.list(metadata="customer:found-42")] == [keyed.id]
    assert [e.id for e in await client.executions.list(metadata=("customer", "found-42"))] == [keyed.id]
    assert [e.id for e in await client.executions.list(concurrency_key="c-42")] == [keyed.id]
    assert [e.id for e in await client.executions.list(idempotency_key="found-1")] == [keyed.id]
    window = {"created_after": keyed.created_at, "created_before": keyed.created_at + timedelta(microseconds=1)}
    assert keyed.id in [e.id for e in await client.executions.list(queue="found", **window)]
    assert await client.executions.list(queue="found", created_before=keyed.created_at) == []
    with pytest.raises(ProblemError) as refused:
        await client.executions.list(metadata="no-colon")
    assert refused.value.status == 422


# --- flow control: a handler's limits, a job's concurrency key, keys paused and listed ------------

async def test_a_handlers_flow_limits_are_put_read_back_and_can_be_put_back_as_read(live: Live, client):
    url = live.handler.route("/limited", reply_result)
    put = await client.handlers.put("limited", url, key_concurrency=2, rate_limit=RateLimit(limit=20, period_seconds=1),
                                    key_rate_limit={"limit": 5, "period_seconds": 60})
    assert (put.key_concurrency, put.rate_limit, put.key_rate_limit) == (
        2, RateLimit(limit=20, period_seconds=1.0), RateLimit(limit=5, period_seconds=60.0))
    shown = await client.handlers.get("limited")
    assert isinstance(shown.key_rate_limit, RateLimit) and shown.key_rate_limit.period_seconds == 60.0
    again = await client.handlers.put("limited", url, key_concurrency=shown.key_concurrency,
                                      rate_limit=shown.rate_limit, key_rate_limit=shown.key_rate_limit)
    assert (again.key_concurrency, again.rate_limit, again.key_rate_limit) == (
        shown.key_concurrency, shown.rate_limit, shown.key_rate_limit)
    cleared = await client.handlers.put("limited", url)  # the PUT is the whole definition
    assert (cleared.key_concurrency, cleared.rate_limit, cleared.key_rate_limit) == (None, None, None)
    with pytest.raises(ProblemError) as refused:
        await client.handlers.put("limited", url, rate_limit=RateLimit(limit=0, period_seconds=1))
    assert refused.value.status == 422 and refused.value.fields == ["rate_limit.limit"]


async def test_a_handlers_batch_is_put_read_back_and_can_be_put_back_as_read(live: Live, client):
    url = live.handler.route("/rows", reply_result)
    put = await client.handlers.put("rows", url, batch=HandlerBatch(max_size=50, max_wait_ms=200))
    assert put.batch == HandlerBatch(max_size=50, max_wait_ms=200)
    shown = await client.handlers.get("rows")
    assert (await client.handlers.put("rows", url, batch=shown.batch)).batch == shown.batch
    assert (await client.handlers.put("rows", url, batch={"max_size": 10})).batch == HandlerBatch(max_size=10)
    assert (await client.handlers.put("rows", url)).batch is None  # the PUT is the whole definition
    with pytest.raises(ProblemError) as refused:
        await client.handlers.put("rows", url, batch={"max_size": 501})
    assert refused.value.status == 422 and refused.value.fields == ["batch.max_size"]


async def test_a_job_carries_its_concurrency_key_alone_and_in_a_batch(client):
    one = await client.jobs.enqueue("echo", {"n": 1}, concurrency_key="customer:42")
    assert one.concurrency_key == "customer:42"
    batch = await client.jobs.enqueue_batch([{"handler": "echo", "concurrency_key": "customer:7"},
                                             {"handler": "echo"}])
    assert [e.concurrency_key for e in batch] == ["customer:7", None]
    done = await client.executions.wait(one.id, timeout=10)
    assert (done.state, done.concurrency_key) == ("SUCCEEDED", "customer:42")
    with pytest.raises(ProblemError) as refused:
        await client.jobs.enqueue_batch([{"handler": "echo"}, {"handler": "echo", "concurrency_key": "has space"}])
    assert refused.value.status == 422 and refused.value.fields == ["jobs[1].concurrency_key"]


async def test_keys_are_listed_in_key_order_across_pages_and_paused_one_at_a_time(client):
    for key, jobs in (("acme", 2), ("globex", 1), ("initech", 1)):
        for _ in range(jobs):
            await client.jobs.enqueue("echo", concurrency_key=key, delay_seconds=3600)
    await client.jobs.enqueue("echo", delay_seconds=3600)  # no key: not listed
    listed = await client.handlers.keys("echo", limit=2)  # two pages: 2 and 1
    assert all(isinstance(k, ConcurrencyKey) for k in listed)
    assert [(k.key, k.waiting, k.in_flight, k.paused) for k in listed] == [
        ("acme", 2, 0, False), ("globex", 1, 0, False), ("initech", 1, 0, False)]
    assert listed[0].rate == KeyRate(count=0) and listed[0].retry_after is None
    first = await client.handlers.keys_page("echo", limit=2)
    assert isinstance(first, Page) and [k.key for k in first.items] == ["acme", "globex"] and first.next_cursor
    rest = await client.handlers.keys_page("echo", first.next_cursor, limit=2)
    assert [k.key for k in rest.items] == ["initech"] and rest.next_cursor is None

    paused = await client.handlers.pause_key("echo", "globex")
    assert isinstance(paused, ConcurrencyKey) and (paused.key, paused.paused, paused.waiting) == ("globex", True, 1)
    assert (await client.handlers.pause_key("echo", "globex")).paused is True  # again: the same, no refusal
    assert [k.key for k in await client.handlers.keys("echo", state="paused")] == ["globex"]
    assert (await client.handlers.resume_key("echo", "globex")).paused is False
    assert await client.handlers.keys("echo", state="paused") == []

    with pytest.raises(ProblemError) as missing:
        await client.handlers.keys("nobody")
    assert missing.value.status == 404
    with pytest.raises(ProblemError) as invalid:
        await client.handlers.keys("echo", state="sleeping")
    assert invalid.value.status == 422 and invalid.value.fields == ["state"]


async def test_a_paused_key_holds_only_its_own_jobs_and_blockers_name_it(client):
    await client.handlers.pause_key("echo", "acme")  # a key needs no jobs to be paused
    held = await client.jobs.enqueue("echo", {"key": "acme"}, concurrency_key="acme")
    other = await client.jobs.enqueue("echo", {"key": "globex"}, concurrency_key="globex")
    assert (await client.executions.wait(other.id, timeout=10)).state == "SUCCEEDED"
    found = await client.executions.blockers(held.id)
    assert isinstance(found, Blockers) and found.state == "ENQUEUED"
    assert found.items == [Blocker(reason="key_paused", key="acme")]
    await client.handlers.resume_key("echo", "acme")
    assert (await client.executions.wait(held.id, timeout=10)).state == "SUCCEEDED"


async def test_a_key_out_of_rate_waits_for_its_next_slot_said_by_blockers_and_keys(live: Live, client):
    url = live.handler.route("/metered", reply_result)
    await client.handlers.put("metered", url, key_rate_limit=RateLimit(limit=1, period_seconds=3600))
    first = await client.jobs.enqueue("metered", concurrency_key="acme")
    assert (await client.executions.wait(first.id, timeout=10)).state == "SUCCEEDED"
    held = await client.jobs.enqueue("metered", concurrency_key="acme")
    [blocker] = (await client.executions.blockers(held.id)).items
    assert (blocker.reason, blocker.key) == ("rate_limit", "acme")
    assert blocker.next_slot is not None and blocker.next_slot > datetime.now(UTC) + timedelta(minutes=55)
    [key] = await client.handlers.keys("metered", state="throttled")
    assert (key.key, key.waiting, key.in_flight, key.rate.count) == ("acme", 1, 0, 1)
    assert key.rate.window_start is not None and key.rate.window_start < datetime.now(UTC)
    assert key.rate.next_slot is not None and abs((key.rate.next_slot - blocker.next_slot).total_seconds()) < 1
    assert (await client.executions.get(held.id)).state == "ENQUEUED"


# --- flow control: a handler's circuit breaker and adaptive limit, debounce at enqueue ------

async def test_a_fresh_handlers_circuit_is_closed_and_it_is_not_adaptive(live: Live, client):
    url = live.handler.route("/fresh", reply_result)
    put = await client.handlers.put("fresh", url)
    assert put.circuit == Circuit(state="closed", until=None, failures=0) and put.adaptive is None
    shown = await client.handlers.get("fresh")
    assert isinstance(shown.circuit, Circuit) and (shown.circuit.state, shown.circuit.failures) == ("closed", 0)
    assert shown.adaptive is None and shown.raw["adaptive"] is None
    [listed] = [h for h in await client.handlers.list() if h.name == "fresh"]
    assert listed.circuit == shown.circuit


async def test_an_adaptive_handler_starts_at_four_or_its_ceiling_and_can_be_put_back_as_read(live: Live, client):
    url = live.handler.route("/adaptive", reply_result)
    wide = await client.handlers.put("adaptive", url, max_concurrency=10, adaptive=True)
    assert wide.adaptive == AdaptiveLimit(limit=4, since=None)  # slow start: min(max_concurrency, 4)
    narrow = await client.handlers.put("adaptive", url, max_concurrency=2, adaptive=True)
    assert narrow.adaptive == AdaptiveLimit(limit=2, since=None)
    shown = await client.handlers.get("adaptive")
    assert isinstance(shown.adaptive, AdaptiveLimit) and shown.adaptive.limit == 2
    # What was read goes back as it came: the answer's adaptive object is the request's true.
    again = await client.handlers.put("adaptive", url, max_concurrency=shown.max_concurrency,
                                      adaptive=shown.adaptive)
    assert again.adaptive == AdaptiveLimit(limit=2, since=None)
    plain = await client.handlers.put("adaptive", url, max_concurrency=2)  # the PUT is the whole definition
    assert plain.adaptive is None
    assert (await client.handlers.put("adaptive", url, max_concurrency=2, adaptive=plain.adaptive)).adaptive is None
    with pytest.raises(ProblemError) as refused:
        await client.handlers.put("adaptive", url, adaptive=True)  # no ceiling to grow to
    assert refused.value.status == 422 and refused.value.fields == ["adaptive"]


async def test_a_trailing_debounce_sends_the_second_enqueue_to_the_waiting_execution(client):
    debounce = Debounce(key="reindex:42", delay_seconds=3600)
    first = await client.jobs.enqueue("echo", {"v": 1}, debounce=debounce)
    assert (first.debounced, first.state, first.payload) == (False, "ENQUEUED", {"v": 1})
    assert 3590 < (first.scheduled_at - first.created_at).total_seconds() <= 3601
    second = await client.jobs.enqueue("echo", {"v": 2}, debounce={"key": "reindex:42", "delay_seconds": 3600})
    assert (second.debounced, second.id, second.payload) == (True, first.id, {"v": 2})  # the latest payload
    assert second.scheduled_at > first.scheduled_at  # pushed
    assert [e.id for e in await client.executions.list(handler="echo")] == [first.id]  # one execution
    other = await client.jobs.enqueue("echo", debounce=Debounce(key="reindex:43", delay_seconds=3600))
    assert other.debounced is False and other.id != first.id
    plain = await client.jobs.enqueue("echo", delay_seconds=3600)
    assert plain.debounced is None and "debounced" not in plain.raw  # only an enqueue that debounces says


async def test_a_leading_debounce_runs_the_first_enqueue_and_drops_the_next_within_the_window(client):
    debounce = Debounce(key="notify", delay_seconds=60, mode="leading", max_delay_seconds=120)
    first = await client.jobs.enqueue("echo", 1, debounce=debounce)
    assert first.debounced is False and first.scheduled_at == first.created_at  # due at once
    assert (await client.executions.wait(first.id, timeout=10)).result == 1
    dropped = await client.jobs.enqueue("echo", 2, debounce=debounce)
    assert (dropped.debounced, dropped.id, dropped.payload, dropped.state) == (True, first.id, 1, "SUCCEEDED")


async def test_a_debounce_is_for_one_job_and_decides_when_it_runs(client):
    debounce = Debounce(key="k", delay_seconds=1)
    with pytest.raises(ProblemError) as batch:
        await client.jobs.enqueue_batch([{"handler": "echo"}, {"handler": "echo", "debounce": debounce}])
    assert batch.value.status == 422 and batch.value.fields == ["jobs[1].debounce"]
    with pytest.raises(ProblemError) as delayed:
        await client.jobs.enqueue("echo", delay_seconds=5, debounce=debounce)
    assert delayed.value.status == 422 and delayed.value.fields == ["debounce"]
    with pytest.raises(ProblemError) as short:
        await client.jobs.enqueue("echo", debounce=Debounce(key="k", delay_seconds=10, max_delay_seconds=5))
    assert short.value.status == 422 and short.value.fields == ["debounce.max_delay_seconds"]
    assert await client.executions.list(handler="echo") == []


# --- schedules, queues, nodes, API keys, health ----------------------------------------------

async def test_schedules_are_declared_previewed_triggered_and_deleted(client):
    declared = await client.schedules.put("nightly", "0 0 3 * * *", "echo", timezone="Europe/Berlin",
                                          payload={"report": True}, enabled=False)
    assert isinstance(declared, Schedule) and (declared.job_id, declared.enabled) == ("nightly", False)
    assert declared.next_fire_at is None or declared.next_fire_at.tzinfo is not None
    assert (await client.schedules.get("nightly")).cron == "0 0 3 * * *"
    assert [s.job_id for s in await client.schedules.list()] == ["nightly"]
    instants = await client.schedules.preview("nightly", count=3)
    assert len(instants) == 3 and instants == sorted(instants) and all(i.tzinfo for i in instants)
    fired = await client.schedules.trigger("nightly")
    assert isinstance(fired, Execution) and (fired.job_type, fired.job_id) == ("CRON", "nightly")
    assert (await client.executions.wait(fired.id, timeout=10)).result == {"report": True}
    with pytest.raises(ProblemError) as invalid:
        await client.schedules.put("broken", "not cron", "echo")
    assert invalid.value.status == 422 and invalid.value.fields == ["cron"]
    assert await client.schedules.delete("nightly") is None
    assert await client.schedules.list() == []


async def test_a_paused_queue_holds_its_jobs_until_resumed(client):
    paused = await client.queues.pause("held")
    assert isinstance(paused, Queue) and (paused.name, paused.paused) == ("held", True)
    execution = await client.jobs.enqueue("echo", queue="held")
    await asyncio.sleep(0.5)
    assert (await client.executions.get(execution.id)).state == "ENQUEUED"
    [queue] = [q for q in await client.queues.list() if q.name == "held"]
    assert queue.paused is True and queue.counts["ENQUEUED"] == 1
    assert (await client.queues.resume("held")).paused is False
    assert (await client.executions.wait(execution.id, timeout=10)).state == "SUCCEEDED"


async def test_nodes_lists_the_live_server(client):
    [node] = await client.nodes.list()
    assert isinstance(node, Node) and node.server_id.startswith("test-") and node.last_heartbeat.tzinfo


async def test_api_keys_are_created_shown_once_listed_and_deleted(jobwire, make_client: MakeClient):
    server = await jobwire(api_keys=["bootstrap"])
    admin = make_client(server.url, api_key="bootstrap")
    created = await admin.api_keys.create("reporting", ["read"], queues=["reports"])
    assert isinstance(created, ApiKey) and created.key and (created.scopes, created.queues) == (["read"],
                                                                                               ["reports"])
    [listed] = await admin.api_keys.list()
    assert (listed.id, listed.name, listed.key) == (created.id, "reporting", None)
    reader = make_client(server.url, api_key=created.key)
    assert await reader.executions.list() == []
    with pytest.raises(ProblemError) as forbidden:
        await reader.api_keys.list()
    assert forbidden.value.status == 403
    assert await admin.api_keys.delete(created.id) is None
    assert await admin.api_keys.list() == []


async def test_health_readiness_and_metrics(client):
    assert (await client.health()).status == "ok"
    ready = await client.readiness()
    assert ready.ready is True and ready.detail is None
    assert "jobwire_claims_total" in await client.metrics()


# --- retries and answers that are not Jobwire's, on real sockets --------------------------------

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
            if isinstance(body, str):  # a page, not JSON
                return web.Response(text=body, status=status, headers=headers, content_type="text/html")
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
EXECUTION = {"id": "0193b0a0-0000-7000-8000-000000000000", "job_id": "j", "job_type": "DELAYED", "handler": "echo",
             "queue": "default", "state": "ENQUEUED", "attempt": 0, "max_attempts": 5,
             "scheduled_at": "2026-12-01T00:00:00Z", "created_at": "2026-12-01T00:00:00Z"}
ENQUEUED = (201, {}, EXECUTION)


async def test_a_503_is_retried_after_its_retry_after_with_the_same_idempotency_key(scripted, make_client):
    server = await scripted(BUSY, ENQUEUED)
    client = make_client(server.url, api_key="k-1")
    execution = await client.jobs.enqueue("echo", {"n": 1})
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
        await client.executions.get(uuid4())
    assert isinstance(unavailable.value, ProblemError) and not unavailable.value.maybe_applied
    assert (unavailable.value.status, unavailable.value.detail) == (503, "send it again")
    assert len(server.seen) == 3


async def test_jobwires_own_503_is_retried_even_for_a_request_that_must_not_repeat(scripted, make_client):
    server = await scripted((503, {}, BUSY[2]), (200, {}, {**EXECUTION, "state": "CANCELLED"}))
    cancelled = await make_client(server.url).executions.cancel(uuid4())
    assert cancelled.state == "CANCELLED" and len(server.seen) == 2  # a problem document: nothing was done


async def test_a_503_page_from_something_else_is_not_proof_enough_to_repeat_a_cancel(scripted, make_client):
    server = await scripted((503, {}, "<html>upstream busy</html>"), ENQUEUED)
    with pytest.raises(Unavailable) as unknown:
        await make_client(server.url).executions.cancel(uuid4())
    assert unknown.value.maybe_applied and "503 came from something other than Jobwire" in str(unknown.value)
    assert len(server.seen) == 1


async def test_nothing_listening_raises_unavailable_after_bounded_tries_for_any_request(make_client):
    client = make_client(f"http://127.0.0.1:{free_port()}", retries=jobwire.Retries(attempts=4, base_delay=0.05))
    for call in (lambda: client.jobs.enqueue("echo"), lambda: client.handlers.put("h", "http://127.0.0.1:9/")):
        with pytest.raises(Unavailable) as unavailable:
            await call()  # a refused connection sent nothing: even a handler's PUT is tried 4 times
        assert unavailable.value.status is None and isinstance(unavailable.value.__cause__, httpx.ConnectError)
        assert "4 tries" in unavailable.value.detail and not unavailable.value.maybe_applied


def test_a_base_url_that_is_not_http_is_refused_when_the_client_is_made():
    for url in ("127.0.0.1:8000", "ftp://example.com", "http://", "jobwire"):
        for kind in (jobwire.JobwireClient, jobwire.AsyncJobwireClient):
            with pytest.raises(ValueError, match="http"):
                kind(url)


async def test_a_server_that_is_not_jobwire_is_said_plainly(scripted, make_client):
    server = await scripted((404, {}, "<html><body>Not Found</body></html>"), (200, {}, "<html>hello</html>"))
    client = make_client(server.url)
    with pytest.raises(ProblemError) as not_found:
        await client.handlers.list()
    assert not_found.value.status == 404 and not not_found.value.is_problem_document
    assert not_found.value.detail is None and "<html>" in not_found.value.body  # the page is no detail
    with pytest.raises(InvalidResponse) as unreadable:
        await client.handlers.list()
    assert unreadable.value.status == 200 and unreadable.value.content_type.startswith("text/html")
    assert "is the base URL Jobwire's?" in str(unreadable.value)


# --- the example ----------------------------------------------------------------------------------

async def test_the_enqueue_and_wait_example_prints_the_result(live: Live):
    process = await asyncio.create_subprocess_exec(
        sys.executable, str(EXAMPLE), "--url", live.url, "--handler", "echo", "--payload", '{"hello": "world"}',
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    out, err = await asyncio.wait_for(process.communicate(), timeout=60)
    assert process.returncode == 0, err.decode()
    lines = out.decode().splitlines()
    assert lines[-1] == '{"hello": "world"}' and "SUCCEEDED" in out.decode()


def test_execution_times_are_aware_and_progress_may_be_null():
    execution = Execution.from_json({**EXECUTION, "progress": None, "completed_at": None})
    assert execution.progress is None and execution.scheduled_at == datetime(2026, 12, 1, tzinfo=UTC)
    reported = Execution.from_json({**EXECUTION, "progress": {"total": 4, "succeeded": 1, "failed": 0,
                                                              "status": "going", "percentage": 25}})
    assert reported.progress is not None and (reported.progress.total, reported.progress.percentage) == (4, 25)
