"""A program using both clients as an application would, for `mypy --strict` (tests/sdk/test_typing.py):
each call's type is pinned with `assert_type`, so a method that lost its annotation, or whose
asyncio twin returns something else, fails the check. Never run: it only has to type-check."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime, timedelta
from typing import assert_type

from jobwire import (
    AdaptiveLimit,
    ApiKey,
    AsyncJobwireClient,
    Attempt,
    Blocker,
    BulkResult,
    Circuit,
    ConcurrencyKey,
    Debounce,
    Delivery,
    Event,
    EventPage,
    Execution,
    Handler,
    HandlerSecret,
    JobwireClient,
    LogEntry,
    Node,
    Page,
    ProblemError,
    Queue,
    RateLimit,
    Readiness,
    Schedule,
    Subscription,
    Unavailable,
)
from jobwire.events import SubscriberApp, subscriber, verify
from jobwire.resources import AsyncEventFeed, EventFeed
from jobwire.types import Job


def blocking(url: str) -> None:
    with JobwireClient(url, api_key="key") as client:
        handler = client.handlers.put("mailer", "https://mail.example.com/jobs", timeout_seconds=30, stateful=False)
        assert_type(handler, Handler)
        assert_type(handler.secret, str | None)
        assert_type(client.handlers.list(), list[Handler])
        assert_type(client.handlers.add_secret("mailer", expire_others_after_seconds=3600), HandlerSecret)
        limited = client.handlers.put("mailer", "https://mail.example.com/jobs", key_concurrency=2,
                                      rate_limit=RateLimit(limit=20, period_seconds=1),
                                      key_rate_limit={"limit": 100, "period_seconds": 60})
        assert_type(limited.rate_limit, RateLimit | None)
        assert_type(limited.key_concurrency, int | None)
        for throttled in client.handlers.keys("mailer", state="throttled"):
            assert_type(throttled, ConcurrencyKey)
            assert_type(throttled.rate.next_slot, datetime | None)
        assert_type(client.handlers.keys_page("mailer", None, limit=10), Page[ConcurrencyKey])
        assert_type(client.handlers.pause_key("mailer", "customer:42"), ConcurrencyKey)
        adaptive = client.handlers.put("mailer", "https://mail.example.com/jobs", max_concurrency=8, adaptive=True)
        assert_type(adaptive.adaptive, AdaptiveLimit | None)
        assert_type(adaptive.circuit, Circuit | None)
        if adaptive.circuit is not None:
            assert_type(adaptive.circuit.until, datetime | None)
        assert_type(client.handlers.put("mailer", "https://mail.example.com/jobs", max_concurrency=8,
                                        adaptive=adaptive.adaptive), Handler)  # put back as read
        execution = client.jobs.enqueue("mailer", {"to": "a@example.com"}, queue="mail", priority=2,
                                        run_at=datetime.now(UTC) + timedelta(minutes=5), idempotency_key="m-1")
        assert_type(execution, Execution)
        assert_type(client.jobs.enqueue("mailer", concurrency_key="customer:42").concurrency_key, str | None)
        debounced = client.jobs.enqueue("mailer", debounce=Debounce(key="reindex:42", delay_seconds=30))
        assert_type(debounced.debounced, bool | None)
        assert_type(client.jobs.enqueue("mailer", debounce={"key": "k", "delay_seconds": 5, "mode": "leading"}),
                    Execution)
        jobs: list[Job] = [{"handler": "mailer", "payload": {"n": n}} for n in range(3)]
        assert_type(client.jobs.enqueue_batch(jobs), list[Execution])
        done = client.executions.wait(execution.id, timeout=30.0)
        assert_type(done.completed_at, datetime | None)
        assert_type(client.executions.list(state="DEAD_LETTER", limit=100), Iterator[Execution])
        assert_type(client.executions.page(None, queue="mail"), Page[Execution])
        assert_type(client.executions.attempts(execution.id), list[Attempt])
        for blocker in client.executions.blockers(execution.id).items:
            assert_type(blocker, Blocker)
            assert_type(blocker.next_slot, datetime | None)
        assert_type(client.executions.logs(execution.id), Iterator[LogEntry])
        for event in client.executions.events(execution.id):
            assert_type(event, Event)
            assert_type(event.data.new_state, str)
        feed_page = client.events.page(None, types=["execution.dead_lettered"], queue="mail", limit=500)
        assert_type(feed_page, EventPage)
        assert_type(feed_page.next_cursor, str)
        listed_events = client.events.list(feed_page.next_cursor, handler="mailer")
        assert_type(listed_events, EventFeed)
        for event in listed_events:
            assert_type(event, Event)
        assert_type(listed_events.cursor, str | None)
        followed = client.events.follow(listed_events.cursor, poll_seconds=0.5, types="execution.succeeded")
        assert_type(next(followed).data.execution_id, str)
        subscription = client.subscriptions.put("audit", "https://audit.example.com/events",
                                                types=["execution.dead_lettered"], queues=("mail",))
        assert_type(subscription, Subscription)
        assert_type(subscription.secret, str | None)
        assert_type(subscription.failing_since, datetime | None)
        assert_type(client.subscriptions.list(), list[Subscription])
        assert_type(client.subscriptions.add_secret("audit"), HandlerSecret)
        for delivery in client.subscriptions.deliveries("audit", status="dead"):
            assert_type(delivery, Delivery)
            assert_type(delivery.event.data.execution_id, str)
            assert_type(client.subscriptions.resend("audit", delivery.id), Delivery)
        assert_type(client.subscriptions.deliveries_page("audit", None, limit=10), Page[Delivery])
        assert_type(client.subscriptions.recover("audit", datetime.now(UTC) - timedelta(days=1)), int)
        assert_type(client.executions.bulk_retry(queue="mail", limit=500), BulkResult)
        assert_type(client.executions.bulk_cancel(ids=[execution.id]), BulkResult)
        schedule = client.schedules.put("nightly", "0 3 * * *", "mailer", timezone="Europe/Paris", enabled=False)
        assert_type(schedule, Schedule)
        assert_type(client.schedules.preview("nightly", count=3), list[datetime])
        assert_type(client.schedules.trigger("nightly"), Execution)
        assert_type(client.queues.pause("mail"), Queue)
        assert_type(client.nodes.list(), list[Node])
        key = client.api_keys.create("reports", ["read"], queues=["mail"])
        assert_type(key, ApiKey)
        assert_type(client.readiness(), Readiness)
        assert_type(client.metrics(), str)
        assert_type(client.executions.delete(execution.id), None)
        try:
            client.executions.retry(execution.id)
        except Unavailable as lost:
            assert_type(lost.maybe_applied, bool)
        except ProblemError as refused:
            assert_type(refused.fields, list[str])


async def asynchronous(url: str) -> None:
    async with AsyncJobwireClient(url) as client:
        assert_type(await client.handlers.put("mailer", "https://mail.example.com/jobs"), Handler)
        execution = await client.jobs.enqueue("mailer", {"to": "a@example.com"}, delay_seconds=1.5)
        assert_type(execution, Execution)
        assert_type(await client.executions.wait(execution.id), Execution)
        listed = client.executions.list(queue="mail")
        assert_type(listed, AsyncIterator[Execution])
        async for item in listed:
            assert_type(item.state, str)
        assert_type(await client.executions.attempts(execution.id), list[Attempt])
        assert_type(client.executions.logs(execution.id, limit=10), AsyncIterator[LogEntry])
        assert_type(await client.executions.bulk_delete(state="SUCCEEDED"), BulkResult)
        assert_type(await client.schedules.list(), list[Schedule])
        assert_type(await client.queues.list(), list[Queue])
        assert_type(client.handlers.keys("mailer"), AsyncIterator[ConcurrencyKey])
        assert_type(await client.handlers.resume_key("mailer", "customer:42"), ConcurrencyKey)
        waiting = await client.jobs.enqueue("mailer", debounce=Debounce(key="k", delay_seconds=5, mode="leading"))
        assert_type(waiting.debounced, bool | None)
        assert_type((await client.handlers.get("mailer")).adaptive, AdaptiveLimit | None)
        assert_type(await client.api_keys.list(), list[ApiKey])
        assert_type(await client.events.page(limit=10), EventPage)
        assert_type(client.events.list(types=["execution.failed"]), AsyncEventFeed)
        following = client.events.follow(None, poll_seconds=2.0, queue="mail")
        async for change in following:
            assert_type(change.occurred_at, datetime)
            assert_type(following.cursor, str | None)
        assert_type(await client.readiness(), Readiness)
        assert_type(await client.subscriptions.get("audit"), Subscription)
        assert_type(client.subscriptions.deliveries("audit"), AsyncIterator[Delivery])
        assert_type(await client.subscriptions.recover("audit", "2026-12-01T00:00:00Z", None), int)


async def on_event(event: Event) -> None:
    assert_type(event.data.new_state, str)


def receiving(body: bytes, headers: dict[str, str], secret: str) -> None:
    assert_type(subscriber(on_event, secret), SubscriberApp)
    assert_type(subscriber(lambda event: None, [secret, secret]), SubscriberApp)
    assert_type(verify(body, headers, secret), Event)
