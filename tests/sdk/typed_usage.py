"""A program using both clients as an application would, for `mypy --strict` (tests/sdk/test_typing.py):
each call's type is pinned with `assert_type`, so a method that lost its annotation, or whose
asyncio twin returns something else, fails the check. Never run: it only has to type-check."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any, assert_type

from jobwire import (
    BulkDryRun,
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
    HandlerBatch,
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
    Signal,
    SignalSent,
    Subscription,
    TransitionEvent,
    Unavailable,
    Workflow,
    WorkflowEvent,
    WorkflowItem,
    WorkflowJob,
    WorkflowRef,
)
from jobwire.events import SubscriberApp, subscriber, verify
from jobwire.resources import AsyncEventFeed, EventFeed
from jobwire.handler import BatchHandlerApp, Child, Context, Parent, Permanent, ReceivedSignal, Resume, batch_asgi_app
from jobwire.handler import Job as DispatchedJob
from jobwire.types import Job, WorkflowJobSpec


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
        batching = client.handlers.put("rows", "https://rows.example.com/", batch=HandlerBatch(max_size=50))
        assert_type(batching.batch, HandlerBatch | None)
        assert_type(client.handlers.put("rows", "https://rows.example.com/", batch={"max_size": 50,
                                                                                    "max_wait_ms": 200}), Handler)
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
            assert_type(blocker.signals, list[str] | None)
            assert_type(blocker.timeout_at, datetime | None)
        sent = client.executions.signal(execution.id, "approved", {"by": "ana"})
        assert_type(sent, SignalSent)
        assert_type(sent.woke, bool)
        assert_type(client.executions.signal(execution.id, "nudge"), SignalSent)
        for signal in client.executions.signals(execution.id, limit=10):
            assert_type(signal, Signal)
            assert_type(signal.consumed_at, datetime | None)
        assert_type(client.executions.logs(execution.id), Iterator[LogEntry])
        for event in client.executions.events(execution.id):
            assert_type(event, Event)
            assert_type(event.data, TransitionEvent | WorkflowEvent)
            if isinstance(event.data, TransitionEvent):
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
        changed = next(followed).data
        if isinstance(changed, WorkflowEvent):
            assert_type(changed.workflow_id, str)
            assert_type(changed.counts, dict[str, int])
        else:
            assert_type(changed.execution_id, str)
        subscription = client.subscriptions.put("audit", "https://audit.example.com/events",
                                                types=["execution.dead_lettered"], queues=("mail",))
        assert_type(subscription, Subscription)
        assert_type(subscription.secret, str | None)
        assert_type(subscription.failing_since, datetime | None)
        assert_type(client.subscriptions.list(), list[Subscription])
        assert_type(client.subscriptions.add_secret("audit"), HandlerSecret)
        for delivery in client.subscriptions.deliveries("audit", status="dead"):
            assert_type(delivery, Delivery)
            assert_type(delivery.execution_id, str)
            assert_type(client.subscriptions.resend("audit", delivery.id), Delivery)
        assert_type(client.subscriptions.deliveries_page("audit", None, limit=10), Page[Delivery])
        assert_type(client.subscriptions.recover("audit", datetime.now(UTC) - timedelta(days=1)), int)
        assert_type(client.executions.bulk_retry(queue="mail", limit=500), BulkResult)
        assert_type(client.executions.bulk_cancel(ids=[execution.id]), BulkResult)
        assert_type(client.executions.bulk_retry(queue="mail", dry_run=True), BulkDryRun)
        assert_type(client.executions.bulk_retry(queue="mail", dry_run=False), BulkResult)
        assert_type(client.executions.bulk_delete(queue="mail", dry_run=bool(execution.attempt)),
                    BulkResult | BulkDryRun)
        assert_type(client.executions.page(metadata=("customer", "42"), concurrency_key="k",
                                           created_after=datetime.now(UTC), created_before="2027-01-01T00:00:00Z",
                                           idempotency_key="order-7"), Page[Execution])
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
        assert_type(execution.workflow, WorkflowRef | None)
        steps: list[WorkflowJobSpec] = [{"ref": "fetch", "handler": "mailer", "queue": "mail"},
                                        {"ref": "send", "handler": "mailer", "depends_on": ["fetch"],
                                         "on_dependency_failure": "run"}]
        workflow = client.workflows.create(steps, name="nightly", metadata={"team": "ops"}, idempotency_key="n-1")
        assert_type(workflow, Workflow)
        assert_type(workflow.items, list[WorkflowItem])
        assert_type(workflow.completed_at, datetime | None)
        assert_type(client.workflows.add_jobs(workflow.id, [{"ref": "late", "handler": "mailer"}]).items,
                    list[WorkflowItem])
        assert_type(client.workflows.get(workflow.id).counts, dict[str, int])
        assert_type(client.workflows.list(state="FAILED", name="nightly", limit=10), Iterator[Workflow])
        assert_type(client.workflows.page(None, state="RUNNING"), Page[Workflow])
        assert_type(client.workflows.jobs(workflow.id, state="WAITING"), Iterator[WorkflowJob])
        assert_type(client.workflows.jobs_page(workflow.id, None, limit=5).items, list[WorkflowJob])
        assert_type(client.workflows.wait(workflow.id, timeout=30.0).is_finished, bool)
        assert_type(client.workflows.cancel(workflow.id), Workflow)
        assert_type(client.workflows.retry(workflow.id).retried, int | None)
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
        assert_type(await client.executions.signal(execution.id, "approved", [1, 2]), SignalSent)
        assert_type(client.executions.signals(execution.id), AsyncIterator[Signal])
        assert_type(client.executions.logs(execution.id, limit=10), AsyncIterator[LogEntry])
        assert_type(await client.executions.bulk_delete(state="SUCCEEDED"), BulkResult)
        assert_type(await client.executions.bulk_delete(state="SUCCEEDED", dry_run=True), BulkDryRun)
        assert_type(client.executions.list(metadata="customer:42"), AsyncIterator[Execution])
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
        made = await client.workflows.create([{"ref": "a", "handler": "mailer"}])
        assert_type(made, Workflow)
        assert_type(client.workflows.list(name="nightly"), AsyncIterator[Workflow])
        assert_type(client.workflows.jobs(made.id), AsyncIterator[WorkflowJob])
        assert_type(await client.workflows.wait(made.id), Workflow)
        assert_type(await client.workflows.retry(made.id), Workflow)


async def on_event(event: Event) -> None:
    if isinstance(event.data, TransitionEvent):
        assert_type(event.data.new_state, str)
    else:
        assert_type(event.data.state, str)


async def handle(job: DispatchedJob, ctx: Context) -> object:
    assert_type(job.workflow, WorkflowRef | None)
    if job.workflow is not None:
        assert_type(job.workflow.ref, str)
    for parent in job.parents.values():
        assert_type(parent, Parent)
        assert_type(parent.has_result, bool)
    assert_type(await ctx.parents(), dict[str, Parent])
    assert_type(await ctx.spawn([{"ref": "a", "handler": "h"}]), dict[str, str])
    assert_type(await ctx.children(), dict[str, Child])
    if job.resume is not None:
        assert_type(job.resume.children, Mapping[str, Child])
    return None


async def approve(job: DispatchedJob, ctx: Context) -> object:
    assert_type(job.steps, Mapping[str, Any])
    assert_type(job.resume, Resume | None)
    if job.resume is None:
        ctx.suspend(signals=["approved", "rejected"], timeout_seconds=86400, steps={"asked": True})
    assert_type(job.resume.n, int)
    assert_type(job.resume.signals, tuple[ReceivedSignal, ...])
    approved = job.resume.signal("approved")
    assert_type(approved, ReceivedSignal | None)
    if job.resume.reason == "timeout":
        ctx.suspend(until=datetime.now(UTC) + timedelta(hours=1))
    return None if approved is None else approved.payload


async def handle_rows(jobs: list[DispatchedJob]) -> list[object]:
    return [{"row": job.payload} if job.payload else Permanent("empty row") for job in jobs]


def batching(secret: str) -> None:
    assert_type(batch_asgi_app(handle_rows, secret), BatchHandlerApp)
    assert_type(batch_asgi_app(lambda jobs: [None for _ in jobs], [secret, secret]), BatchHandlerApp)


def receiving(body: bytes, headers: dict[str, str], secret: str) -> None:
    assert_type(subscriber(on_event, secret), SubscriberApp)
    assert_type(subscriber(lambda event: None, [secret, secret]), SubscriberApp)
    assert_type(verify(body, headers, secret), Event)
