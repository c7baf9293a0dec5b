"""A queue-limited key sees its queues only, on every route (issue 21, behaviour 2).

CONFINEMENT classifies every operation of the OpenAPI document by how it confines a key limited to
queues: a listing filters, an item route answers another queue's item exactly as one that does not
exist (404), a write into another queue is refused 403 naming it, a bulk action matches nothing of
another queue. Handlers, nodes and API keys are global (not confined); callbacks take a callback
token, not an API key; health and metrics need no key at all. A route the document gains without
a row here fails test_every_route_of_the_document_is_classified: every new route is classified.

The walk makes each route's requests on the data of a queue the key may not use, against a live
server holding data in two queues, and asserts nothing of that queue leaks (ids, payloads, job
ids, schedule names, log messages) and nothing of it changes. It walks with two keys: the widest
key one can make ([read, enqueue, operate] limited to one queue), refused 403 by scope on what only
admin may do; and an admin key limited to that queue, which no API makes (an admin key cannot be
limited: it could make one that is not) but a hand-written row can, so that the routes only admin
reaches are confined too.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from app.api.app import create_api
from app.api.events.stream import StreamTiming
from app.db.database import Database
from app.domain.access import Scope, granted
from app.services.api_keys import key_hash, new_key
from tests.conftest import PROBLEM, RunningServer, sql
from tests.sse import SseReader

BOOT = {"authorization": "Bearer boot"}
NOWHERE = "http://127.0.0.1:9/jobs"
LATER = "2999-01-01T00:00:00Z"
MINE, THEIRS = "q-mine", "q-theirs"
# Every name and value of the other queue's data contains it; the ids are listed besides.
THEIRS_MARK = "theirs"
MISSING_ID = "00000000-0000-4000-8000-00000000dead"
MISSING_SCHEDULE = "missing-schedule"
MISSING_SUBSCRIPTION = "missing-subscription"


def bearer(key: str) -> dict[str, str]:
    return {"authorization": f"Bearer {key}"}


# --- the world: data in two queues ----------------------------------------------------------

@dataclass
class Side:
    """One queue's data: an ENQUEUED execution (with a log entry), a CANCELLED one (with an
    event), a schedule, a subscription to its events, a workflow of two jobs (one WAITING)."""

    queue: str
    enqueued: str = ""
    cancelled: str = ""
    schedule: str = ""
    subscription: str = ""
    workflow: str = ""
    workflow_name: str = ""
    workflow_jobs: tuple[str, str] = ("", "")  # its first job (ENQUEUED) and the one WAITING for it

    @property
    def ids(self) -> list[str]:
        return [self.enqueued, self.cancelled, *self.workflow_jobs]


@dataclass
class World:
    mine: Side
    theirs: Side


async def plant(client: httpx.AsyncClient, db: Database, queue: str, tag: str) -> Side:
    side = Side(queue)
    jobs = [{"handler": "h", "queue": queue, "run_at": LATER, "job_id": f"{tag}-job-{i}",
             "payload": {"secret": f"{tag}-payload-{i}"}, "metadata": {"note": f"{tag}-metadata"},
             "idempotency_key": f"{tag}-idem-{i}"} for i in range(2)]
    response = await client.post("/v1/jobs/batch", json={"jobs": jobs}, headers=BOOT)
    assert response.status_code == 201, response.text
    side.enqueued, side.cancelled = (e["id"] for e in response.json()["items"])
    assert (await client.post(f"/v1/executions/{side.cancelled}/cancel", headers=BOOT)).status_code == 200
    await sql(db, "INSERT INTO job_logs (execution_id, attempt, level, message) VALUES (:id, 0, 'INFO', :m)",
              id=uuid.UUID(side.enqueued), m=f"{tag}-log-entry")
    side.schedule = f"{tag}-schedule"
    schedule = {"cron": "0 0 1 1 *", "handler": "h", "queue": queue, "payload": {"secret": f"{tag}-schedule-payload"}}
    assert (await client.put(f"/v1/schedules/{side.schedule}", json=schedule, headers=BOOT)).status_code == 201
    side.subscription = f"{tag}-subscription"
    subscription = {"url": f"http://127.0.0.1:9/{tag}-events", "queues": [queue]}
    assert (await client.put(f"/v1/subscriptions/{side.subscription}", json=subscription, headers=BOOT)
            ).status_code == 201
    side.workflow_name = f"{tag}-workflow-{queue}"  # names the queue: the key's own listing shows it
    workflow = {"name": side.workflow_name, "metadata": {"note": f"{tag}-workflow-metadata"}, "jobs": [
        {"ref": f"{tag}-first", "handler": "h", "queue": queue, "run_at": LATER,
         "payload": {"secret": f"{tag}-workflow-payload"}},
        {"ref": f"{tag}-then", "handler": "h", "queue": queue, "depends_on": [f"{tag}-first"]}]}
    made = await client.post("/v1/workflows", json=workflow, headers=BOOT)
    assert made.status_code == 201, made.text
    side.workflow = made.json()["id"]
    first, then = (i["execution_id"] for i in made.json()["items"])
    side.workflow_jobs = (first, then)
    return side


async def snapshot(db: Database, side: Side) -> dict[str, Any]:
    """Everything stored of one queue: what no request of a key that may not use it may change."""
    return {
        "executions": [dict(r) for r in await sql(db, "SELECT * FROM job_executions WHERE queue = :q ORDER BY id",
                                                  q=side.queue)],
        "schedules": [dict(r) for r in await sql(db, "SELECT * FROM job_schedules WHERE queue = :q ORDER BY job_id",
                                                 q=side.queue)],
        "queue": [dict(r) for r in await sql(db, "SELECT * FROM job_queues WHERE name = :q", q=side.queue)],
        "subscriptions": [dict(r) for r in await sql(db, "SELECT * FROM job_subscriptions WHERE :q = ANY(queues) "
                                                         "ORDER BY name", q=side.queue)],
        "subscription_secrets": [dict(r) for r in await sql(
            db, "SELECT x.* FROM job_subscription_secrets x JOIN job_subscriptions s ON s.name = x.subscription "
                "WHERE :q = ANY(s.queues) ORDER BY x.id", q=side.queue)],
        "logs": [dict(r) for r in await sql(db, "SELECT l.* FROM job_logs l JOIN job_executions e "
                                                "ON e.id = l.execution_id WHERE e.queue = :q ORDER BY l.id",
                                            q=side.queue)],
        "events": [dict(r) for r in await sql(db, "SELECT v.id, v.event FROM job_events v JOIN job_executions e "
                                                  "ON e.id = v.execution_id WHERE e.queue = :q ORDER BY v.id",
                                              q=side.queue)],
        "workflows": [dict(r) for r in await sql(db, "SELECT w.* FROM job_workflows w WHERE EXISTS (SELECT 1 FROM "
                                                     "job_executions e WHERE e.workflow_id = w.id AND e.queue = :q) "
                                                     "ORDER BY w.id", q=side.queue)],
        "signals": [dict(r) for r in await sql(db, "SELECT s.* FROM job_signals s JOIN job_executions e "
                                                   "ON e.id = s.execution_id WHERE e.queue = :q ORDER BY s.id",
                                               q=side.queue)],
        "dependencies": [dict(r) for r in await sql(db, "SELECT d.* FROM job_dependencies d JOIN job_executions e "
                                                        "ON e.id = d.child_id WHERE e.queue = :q "
                                                        "ORDER BY d.child_id, d.parent_id", q=side.queue)],
    }


# --- requests and what may be seen in their answers -----------------------------------------

@dataclass(frozen=True)
class Call:
    method: str
    path: str
    json: Any = None
    params: dict[str, str] | None = None
    sent: tuple[str, ...] = ()  # values of the other queue the caller itself sent (they may be echoed)


def leaks(response: httpx.Response | str, world: World, call: Call, allowed: tuple[str, ...] = ()) -> list[str]:
    """What of the other queue's data the answer (or the text of a stream) shows that the caller
    did not send itself."""
    text = response if isinstance(response, str) else response.text
    for value in sorted({*call.sent, *allowed}, key=len, reverse=True):
        text = text.replace(value, "<sent>")
    found = [i for i in world.theirs.ids if i in text]
    if THEIRS_MARK in text:
        found.append(text[max(0, text.index(THEIRS_MARK) - 60):text.index(THEIRS_MARK) + 60])
    return found


class Walk:
    def __init__(self, client: httpx.AsyncClient, key: dict[str, str], scopes: frozenset[Scope],
                 world: World) -> None:
        self.client, self.key, self.scopes, self.world = client, key, scopes, world

    async def send(self, call: Call, headers: dict[str, str] | None = None) -> httpx.Response:
        return await self.client.request(call.method, call.path, json=call.json, params=call.params,
                                         headers=self.key if headers is None else headers)

    def no_leak(self, response: httpx.Response | str, call: Call, allowed: tuple[str, ...] = ()) -> None:
        found = leaks(response, self.world, call, allowed)
        assert found == [], f"{call.method} {call.path} {call.params or ''} leaks {found}: {response.text}"


def where(call: Call, response: httpx.Response) -> str:
    return f"{call.method} {call.path} {call.params or ''} {call.json or ''} → {response.status_code} {response.text}"


def assert_problem(response: httpx.Response, status: int, call: Call) -> None:
    assert response.status_code == status, where(call, response)
    assert response.headers["content-type"] == PROBLEM, where(call, response)


# --- the rules ------------------------------------------------------------------------------

Calls = Callable[[World], list[Call]]


@dataclass(frozen=True)
class Calling:
    calls: Calls

    def requests(self, world: World) -> list[Call]:
        """The calls this rule makes on the other queue's data."""
        return self.calls(world)


@dataclass(frozen=True)
class Listing(Calling):
    """Shows the key's queues only: the first call lists the key's own data; none shows another
    queue's (a filter naming that queue, or its job ids, answers as if it held nothing)."""

    async def check(self, walk: Walk) -> None:
        for i, call in enumerate(self.requests(walk.world)):
            response = await walk.send(call)
            assert response.status_code == 200, where(call, response)
            if i == 0:
                assert walk.world.mine.queue in response.text or walk.world.mine.enqueued in response.text, \
                    f"the listing shows nothing of the key's own queue: {where(call, response)}"
            walk.no_leak(response, call)


@dataclass(frozen=True)
class Stream(Calling):
    """A listing served as server-sent events (GET /v1/events/stream): read until the stream
    idles (its keepalive comment comes once it found the feed's end), it showed the key's queues
    only, as Listing."""

    async def check(self, walk: Walk) -> None:
        for i, call in enumerate(self.requests(walk.world)):
            async with walk.client.stream(call.method, call.path, params=call.params, headers=walk.key) as response:
                if response.status_code != 200:
                    await response.aread()
                    raise AssertionError(where(call, response))
                sse, data = SseReader(response), []
                while (message := await sse.next()) is not None and message.comment is None:
                    data.append(repr(message))
            text = "\n".join(data)
            if i == 0:
                assert walk.world.mine.cancelled in text, f"the stream shows nothing of the key's own queue: {text}"
            walk.no_leak(text, call)


@dataclass(frozen=True)
class Item:
    """Another queue's item is answered exactly as one that does not exist: 404, the same problem
    but for the id the caller sent. `target` picks the item (execution: `enqueued` or `cancelled`,
    the one the route would act on if it could see it; or the `schedule`, `subscription`,
    `workflow`); `mine_ok`: the route only reads, so the key's own item is also asked for and
    answers 200."""

    method: str
    path: str
    target: str
    json: Any = None
    mine_ok: bool = False

    def call(self, value: str, sent: tuple[str, ...] = ()) -> Call:
        param = {"schedule": "{job_id}", "subscription": "{name}", "workflow": "{workflow_id}"}.get(
            self.target, "{execution_id}")
        return Call(self.method, self.path.replace(param, value), self.json, sent=sent)

    def requests(self, world: World) -> list[Call]:
        theirs = getattr(world.theirs, self.target)
        return [self.call(theirs, (theirs,))]

    async def check(self, walk: Walk) -> None:
        theirs = getattr(walk.world.theirs, self.target)
        missing = {"schedule": MISSING_SCHEDULE, "subscription": MISSING_SUBSCRIPTION}.get(self.target, MISSING_ID)
        other = await walk.send(call := self.call(theirs, (theirs,)))
        absent = await walk.send(self.call(missing))
        assert_problem(other, 404, call)
        assert other.text.replace(theirs, "<id>") == absent.text.replace(missing, "<id>"), where(call, other)
        walk.no_leak(other, call)
        if self.mine_ok:
            mine = await walk.send(own := self.call(getattr(walk.world.mine, self.target)))
            assert mine.status_code == 200, where(own, mine)


@dataclass(frozen=True)
class Write(Calling):
    """Writing into another queue (or moving a thing into or out of it) is refused 403 naming the
    queue the caller sent, and the key's limit; nothing is written."""

    async def check(self, walk: Walk) -> None:
        for call in self.requests(walk.world):
            response = await walk.send(call)
            assert_problem(response, 403, call)
            detail = response.json()["detail"]
            assert f"limited to queues [{walk.world.mine.queue}]" in detail, where(call, response)
            if THEIRS in call.sent:
                assert repr(THEIRS) in detail, where(call, response)
            walk.no_leak(response, call)


@dataclass(frozen=True)
class Bulk(Calling):
    """A bulk action naming another queue's executions (by id, queue or job id) matches none."""

    async def check(self, walk: Walk) -> None:
        for call in self.requests(walk.world):
            response = await walk.send(call)
            assert response.status_code == 200, where(call, response)
            answer = response.json()  # a dry run's answer has no `changed`
            assert (answer["matched"], answer.get("changed", 0), answer["more"]) == (0, 0, False), where(call, response)
            walk.no_leak(response, call)


@dataclass(frozen=True)
class Global(Calling):
    """Not confined: the resource belongs to no queue (handlers are global, as are nodes and the
    keys, which only unlimited admin keys manage). Answered as to any key with the scope, and it
    shows nothing of a queue's executions or schedules."""

    async def check(self, walk: Walk) -> None:
        for call in self.requests(walk.world):
            response = await walk.send(call)
            assert response.status_code < 500 and response.status_code not in (401, 403), where(call, response)
            walk.no_leak(response, call)


@dataclass(frozen=True)
class Callback(Calling):
    """Takes the execution's callback token, never an API key: the key is refused (403, a token
    not valid for the execution) and nothing of the execution is shown."""

    async def check(self, walk: Walk) -> None:
        for call in self.requests(walk.world):
            response = await walk.send(call)
            assert_problem(response, 403, call)
            walk.no_leak(response, call)


@dataclass(frozen=True)
class Open:
    """Needs no key at all, so a key changes nothing: what it shows anyone who reaches the port
    may name queues (the metrics label series by queue) but no execution, payload or schedule."""

    path: str

    def requests(self, world: World) -> list[Call]:
        return [Call("GET", self.path)]

    async def check(self, walk: Walk) -> None:
        call = Call("GET", self.path)
        with_key, without = await walk.send(call), await walk.send(call, headers={})
        assert with_key.status_code == without.status_code == 200, where(call, with_key)
        walk.no_leak(with_key, call, allowed=(THEIRS,))


Rule = Listing | Stream | Item | Write | Bulk | Global | Callback | Open


def _job(queue: str, **extra: Any) -> dict[str, Any]:
    return {"handler": "h", "queue": queue, "run_at": LATER, **extra}


def _schedule(queue: str) -> dict[str, Any]:
    return {"cron": "0 0 1 1 *", "handler": "h", "queue": queue}


def _execution_callbacks(suffix: str, method: str = "POST", body: Any = None) -> Calls:
    return lambda w: [Call(method, f"/v1/executions/{w.theirs.enqueued}{suffix}", body, sent=(w.theirs.enqueued,))]


def _bulk(action: str) -> Calls:
    path = f"/v1/executions/bulk-{action}"
    return lambda w: [Call("POST", path, {"ids": w.theirs.ids}, sent=tuple(w.theirs.ids)),
                      Call("POST", path, {"queue": THEIRS}, sent=(THEIRS,)),
                      Call("POST", path, {"job_id": "theirs-job-0"}, sent=("theirs-job-0",)),
                      Call("POST", path, {"ids": w.theirs.ids, "dry_run": True}, sent=tuple(w.theirs.ids)),
                      Call("POST", path, {"queue": THEIRS, "dry_run": True}, sent=(THEIRS,))]


def _queue_action(action: str) -> Calls:
    return lambda w: [Call("POST", f"/v1/queues/{THEIRS}/{action}", sent=(THEIRS,))]


CONFINEMENT: dict[tuple[str, str], Rule] = {
    # Handlers are global: every queue's jobs may go to any handler.
    ("PUT", "/v1/handlers/{name}"): Global(lambda w: [Call("PUT", "/v1/handlers/h-new", {"url": NOWHERE})]),
    ("GET", "/v1/handlers/{name}"): Global(lambda w: [Call("GET", "/v1/handlers/h")]),
    ("DELETE", "/v1/handlers/{name}"): Global(lambda w: [Call("DELETE", "/v1/handlers/h"),
                                                         Call("DELETE", "/v1/handlers/h-unknown")]),
    ("GET", "/v1/handlers"): Global(lambda w: [Call("GET", "/v1/handlers")]),
    ("POST", "/v1/handlers/{name}/secrets"): Global(lambda w: [Call("POST", "/v1/handlers/h/secrets", {})]),
    ("DELETE", "/v1/handlers/{name}/secrets/{secret_id}"): Global(
        lambda w: [Call("DELETE", f"/v1/handlers/h/secrets/{MISSING_ID}")]),
    # A handler's concurrency keys hold jobs of every queue: a queue-limited key may not see or pause them.
    ("GET", "/v1/handlers/{name}/keys"): Write(lambda w: [Call("GET", "/v1/handlers/h/keys")]),
    ("POST", "/v1/handlers/{name}/keys/{key}/pause"): Write(lambda w: [Call("POST", "/v1/handlers/h/keys/acme/pause")]),
    ("POST", "/v1/handlers/{name}/keys/{key}/resume"): Write(
        lambda w: [Call("POST", "/v1/handlers/h/keys/acme/resume")]),
    ("POST", "/v1/jobs"): Write(lambda w: [Call("POST", "/v1/jobs", _job(THEIRS), sent=(THEIRS,))]),
    ("POST", "/v1/jobs/batch"): Write(
        lambda w: [Call("POST", "/v1/jobs/batch", {"jobs": [_job(MINE), _job(THEIRS)]}, sent=(THEIRS,))]),
    ("DELETE", "/v1/executions/{execution_id}"): Item("DELETE", "/v1/executions/{execution_id}", "cancelled"),
    ("GET", "/v1/executions/{execution_id}"): Item("GET", "/v1/executions/{execution_id}", "enqueued", mine_ok=True),
    ("POST", "/v1/executions/bulk-retry"): Bulk(_bulk("retry")),
    ("POST", "/v1/executions/bulk-cancel"): Bulk(_bulk("cancel")),
    ("POST", "/v1/executions/bulk-delete"): Bulk(_bulk("delete")),
    ("GET", "/v1/executions"): Listing(lambda w: [
        Call("GET", "/v1/executions"), Call("GET", "/v1/executions", params={"queue": THEIRS}, sent=(THEIRS,)),
        Call("GET", "/v1/executions", params={"job_id": "theirs-job-0"}, sent=("theirs-job-0",)),
        Call("GET", "/v1/executions", params={"handler": "h", "state": "CANCELLED"}),
        Call("GET", "/v1/executions", params={"metadata": "note:theirs-metadata"}, sent=("theirs-metadata",)),
        Call("GET", "/v1/executions", params={"idempotency_key": "theirs-idem-0"}, sent=("theirs-idem-0",)),
        Call("GET", "/v1/executions", params={"created_after": "2000-01-01T00:00:00Z",
                                              "created_before": "2999-01-01T00:00:00Z"})]),
    ("GET", "/v1/executions/{execution_id}/logs"): Item("GET", "/v1/executions/{execution_id}/logs", "enqueued",
                                                        mine_ok=True),
    ("GET", "/v1/executions/{execution_id}/attempts"): Item("GET", "/v1/executions/{execution_id}/attempts",
                                                            "enqueued", mine_ok=True),
    ("GET", "/v1/executions/{execution_id}/blockers"): Item("GET", "/v1/executions/{execution_id}/blockers",
                                                            "enqueued", mine_ok=True),
    ("GET", "/v1/executions/{execution_id}/events"): Item("GET", "/v1/executions/{execution_id}/events", "cancelled",
                                                          mine_ok=True),
    # Signals go to one execution's mailbox: another queue's execution is answered as a missing one.
    ("GET", "/v1/executions/{execution_id}/signals"): Item("GET", "/v1/executions/{execution_id}/signals", "enqueued",
                                                           mine_ok=True),
    ("POST", "/v1/executions/{execution_id}/signals/{name}"): Item(
        "POST", "/v1/executions/{execution_id}/signals/go", "enqueued", json={"payload": {"secret": "sent"}}),
    ("POST", "/v1/executions/{execution_id}/cancel"): Item("POST", "/v1/executions/{execution_id}/cancel",
                                                           "enqueued"),
    ("POST", "/v1/executions/{execution_id}/retry"): Item("POST", "/v1/executions/{execution_id}/retry", "cancelled"),
    ("GET", "/v1/events"): Listing(lambda w: [
        Call("GET", "/v1/events"), Call("GET", "/v1/events", params={"queue": THEIRS}, sent=(THEIRS,))]),
    ("GET", "/v1/events/stream"): Stream(lambda w: [
        Call("GET", "/v1/events/stream"),
        Call("GET", "/v1/events/stream", params={"queue": THEIRS}, sent=(THEIRS,))]),
    ("GET", "/v1/nodes"): Global(lambda w: [Call("GET", "/v1/nodes")]),
    ("GET", "/v1/queues"): Listing(lambda w: [Call("GET", "/v1/queues")]),
    ("POST", "/v1/queues/{name}/pause"): Write(_queue_action("pause")),
    ("POST", "/v1/queues/{name}/resume"): Write(_queue_action("resume")),
    ("PUT", "/v1/schedules/{job_id}"): Write(lambda w: [
        Call("PUT", "/v1/schedules/theirs-new", _schedule(THEIRS), sent=("theirs-new", THEIRS)),  # create there
        Call("PUT", f"/v1/schedules/{w.mine.schedule}", _schedule(THEIRS), sent=(THEIRS,)),  # move one there
        Call("PUT", f"/v1/schedules/{w.theirs.schedule}", _schedule(MINE), sent=(w.theirs.schedule,)),  # move out
        Call("PUT", f"/v1/schedules/{w.theirs.schedule}", _schedule(THEIRS), sent=(w.theirs.schedule, THEIRS))]),
    ("GET", "/v1/schedules/{job_id}"): Item("GET", "/v1/schedules/{job_id}", "schedule", mine_ok=True),
    ("DELETE", "/v1/schedules/{job_id}"): Item("DELETE", "/v1/schedules/{job_id}", "schedule"),
    ("GET", "/v1/schedules"): Listing(lambda w: [Call("GET", "/v1/schedules")]),
    ("POST", "/v1/schedules/{job_id}/trigger"): Item("POST", "/v1/schedules/{job_id}/trigger", "schedule"),
    ("GET", "/v1/schedules/{job_id}/preview"): Item("GET", "/v1/schedules/{job_id}/preview", "schedule",
                                                    mine_ok=True),
    # API keys are global: only admin keys manage them, and an admin key is never limited to queues.
    ("GET", "/v1/api-keys"): Global(lambda w: [Call("GET", "/v1/api-keys")]),
    ("POST", "/v1/api-keys"): Global(lambda w: [Call("POST", "/v1/api-keys", {"name": "made", "scopes": ["read"],
                                                                               "queues": [MINE]})]),
    ("DELETE", "/v1/api-keys/{key_id}"): Global(lambda w: [Call("DELETE", f"/v1/api-keys/{MISSING_ID}")]),
    ("POST", "/v1/executions/{execution_id}/complete"): Callback(
        _execution_callbacks("/complete", body={"outcome": "succeeded"})),
    ("POST", "/v1/executions/{execution_id}/progress"): Callback(_execution_callbacks("/progress", body={})),
    ("POST", "/v1/executions/{execution_id}/heartbeat"): Callback(_execution_callbacks("/heartbeat")),
    ("POST", "/v1/executions/{execution_id}/logs"): Callback(
        _execution_callbacks("/logs", body={"entries": [{"level": "INFO", "message": "x"}]})),
    ("GET", "/v1/executions/{execution_id}/steps/{name}"): Callback(_execution_callbacks("/steps/s", "GET")),
    ("GET", "/v1/executions/{execution_id}/parents"): Callback(lambda w: [  # the WAITING job's parent and payload
        Call("GET", f"/v1/executions/{w.theirs.workflow_jobs[1]}/parents", sent=(w.theirs.workflow_jobs[1],))]),
    ("POST", "/v1/executions/{execution_id}/children"): Callback(
        _execution_callbacks("/children", body={"jobs": [{"ref": "c", "handler": "h", "queue": MINE}]})),
    ("GET", "/v1/executions/{execution_id}/children"): Callback(_execution_callbacks("/children", "GET")),
    ("PUT", "/v1/executions/{execution_id}/steps/{name}"): Callback(
        _execution_callbacks("/steps/s", "PUT", {"result": 1})),
    # A subscription belongs to the queues it filters for: a limited key manages those within its queues.
    ("PUT", "/v1/subscriptions/{name}"): Write(lambda w: [
        Call("PUT", "/v1/subscriptions/made", {"url": NOWHERE, "queues": [THEIRS]}, sent=(THEIRS,)),
        Call("PUT", "/v1/subscriptions/made", {"url": NOWHERE}),
        Call("PUT", f"/v1/subscriptions/{w.theirs.subscription}", {"url": NOWHERE, "queues": [MINE]},
             sent=(w.theirs.subscription,))]),
    ("GET", "/v1/subscriptions"): Listing(lambda w: [Call("GET", "/v1/subscriptions")]),
    ("GET", "/v1/subscriptions/{name}"): Item("GET", "/v1/subscriptions/{name}", "subscription", mine_ok=True),
    ("DELETE", "/v1/subscriptions/{name}"): Item("DELETE", "/v1/subscriptions/{name}", "subscription"),
    ("POST", "/v1/subscriptions/{name}/secrets"): Item("POST", "/v1/subscriptions/{name}/secrets", "subscription"),
    ("DELETE", "/v1/subscriptions/{name}/secrets/{secret_id}"): Item(
        "DELETE", f"/v1/subscriptions/{{name}}/secrets/{MISSING_ID}", "subscription"),
    ("GET", "/v1/subscriptions/{name}/deliveries"): Item("GET", "/v1/subscriptions/{name}/deliveries", "subscription",
                                                         mine_ok=True),
    ("POST", "/v1/subscriptions/{name}/deliveries/{delivery_id}/resend"): Item(
        "POST", "/v1/subscriptions/{name}/deliveries/1/resend", "subscription"),
    ("POST", "/v1/subscriptions/{name}/recover"): Item("POST", "/v1/subscriptions/{name}/recover", "subscription",
                                                       json={"since": "2026-01-01T00:00:00Z"}),
    # A workflow is seen by a key limited to queues when all its jobs are in them; one with a job
    # elsewhere is answered as one that does not exist, and a workflow job into another queue is refused.
    ("POST", "/v1/workflows"): Write(lambda w: [
        Call("POST", "/v1/workflows", {"jobs": [{"ref": "a", **_job(MINE)}, {"ref": "b", "depends_on": ["a"],
                                                                               **_job(THEIRS)}]}, sent=(THEIRS,))]),
    ("GET", "/v1/workflows"): Listing(lambda w: [
        Call("GET", "/v1/workflows"),
        Call("GET", "/v1/workflows", params={"name": w.theirs.workflow_name}, sent=(w.theirs.workflow_name,)),
        Call("GET", "/v1/workflows", params={"state": "RUNNING"})]),
    ("GET", "/v1/workflows/{workflow_id}"): Item("GET", "/v1/workflows/{workflow_id}", "workflow", mine_ok=True),
    ("GET", "/v1/workflows/{workflow_id}/jobs"): Item("GET", "/v1/workflows/{workflow_id}/jobs", "workflow",
                                                      mine_ok=True),
    ("POST", "/v1/workflows/{workflow_id}/jobs"): Item(
        "POST", "/v1/workflows/{workflow_id}/jobs", "workflow",
        json={"jobs": [{"ref": "added", "depends_on": ["theirs-first"], **_job(MINE)}]}),
    ("POST", "/v1/workflows/{workflow_id}/cancel"): Item("POST", "/v1/workflows/{workflow_id}/cancel", "workflow"),
    ("POST", "/v1/workflows/{workflow_id}/retry"): Item("POST", "/v1/workflows/{workflow_id}/retry", "workflow"),
    ("GET", "/healthz"): Open("/healthz"),
    ("GET", "/readyz"): Open("/readyz"),
    ("GET", "/metrics"): Open("/metrics"),
}


def operations(document: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    return {(method.upper(), path): operation for path, ops in document["paths"].items()
            for method, operation in ops.items()}


def test_every_route_of_the_document_is_classified() -> None:
    """A new route gets a row in CONFINEMENT saying how it confines a queue-limited key."""
    document = operations(create_api(max_request_bytes=1 << 20).openapi())
    unclassified = sorted(f"{m} {p}" for m, p in document.keys() - CONFINEMENT.keys())
    assert unclassified == [], "classify each route in CONFINEMENT (tests/api/test_queue_confinement.py)"
    assert sorted(f"{m} {p}" for m, p in CONFINEMENT.keys() - document.keys()) == [], "rows of routes that are gone"


# --- the walk -------------------------------------------------------------------------------

@pytest.fixture
async def client(boot_server: RunningServer, db: Database) -> AsyncIterator[httpx.AsyncClient]:
    # The event stream idles (its keepalive comment) soon after it found the feed's end.
    boot_server.app.state.event_stream_timing = StreamTiming(poll_seconds=0.05, keepalive_seconds=0.3)
    async with httpx.AsyncClient(base_url=boot_server.url, timeout=10) as c:
        yield c


@pytest.fixture
async def world(client: httpx.AsyncClient, db: Database) -> World:
    assert (await client.put("/v1/handlers/h", json={"url": NOWHERE}, headers=BOOT)).status_code == 201
    return World(mine=await plant(client, db, MINE, "mine"), theirs=await plant(client, db, THEIRS, THEIRS_MARK))


async def made_key(client: httpx.AsyncClient, scopes: list[str], queues: list[str]) -> dict[str, str]:
    response = await client.post("/v1/api-keys", json={"name": "limited", "scopes": scopes, "queues": queues},
                                 headers=BOOT)
    assert response.status_code == 201, response.text
    return bearer(response.json()["key"])


async def hand_written_key(db: Database, scopes: list[str], queues: list[str]) -> dict[str, str]:
    """A key stored straight into job_api_keys, bypassing the API's rules (an admin key limited to
    queues: POST /v1/api-keys refuses to make one)."""
    key = new_key()
    await sql(db, "INSERT INTO job_api_keys (name, key_hash, scopes, queues) "
                  "VALUES ('hand-written', :h, CAST(:s AS text[]), CAST(:q AS text[]))",
              h=key_hash(key), s=scopes, q=queues)
    return bearer(key)


@pytest.mark.parametrize("scopes", [["read", "enqueue", "operate"], ["admin"]], ids=["widest-made", "admin-by-hand"])
async def test_a_queue_limited_key_sees_and_touches_nothing_of_another_queue_on_any_route(
        client: httpx.AsyncClient, db: Database, world: World, scopes: list[str]) -> None:
    if "admin" in scopes:
        key = await hand_written_key(db, scopes, [MINE])
    else:
        key = await made_key(client, scopes, [MINE])
    document = operations((await client.get("/openapi.json")).json())
    assert document.keys() == CONFINEMENT.keys()  # the live document is the one classified
    walk = Walk(client, key, granted(Scope(s) for s in scopes), world)
    before = await snapshot(db, world.theirs)
    checked = 0
    for (method, path), rule in CONFINEMENT.items():
        needed = document[(method, path)].get("x-jobwire-scope")
        if needed is not None and Scope(needed) not in walk.scopes:
            # Refused by scope before anything is looked up; still, nothing may leak.
            for call in rule.requests(world):
                response = await walk.send(call)
                assert_problem(response, 403, call)
                assert f"{needed} is needed" in response.json()["detail"], where(call, response)
                walk.no_leak(response, call)
            continue
        await rule.check(walk)
        checked += 1
    assert checked >= 20
    assert await snapshot(db, world.theirs) == before


# --- idempotency keys across queues ---------------------------------------------------------

async def test_an_idempotency_key_held_in_another_queue_is_answered_as_one_reused_with_another_body(
        client: httpx.AsyncClient, world: World) -> None:
    """The 422 is the one a key reused with another body in the key's own queue gets, word for
    word (no queue, no id), one job or a batch; and the stored execution of the other queue is
    never returned, though the body differs from its request in the queue alone."""
    key = await made_key(client, ["enqueue", "read", "operate"], [MINE])
    body = {"handler": "h", "payload": {"n": 1}, "run_at": LATER, "idempotency_key": "shared"}
    held = await client.post("/v1/jobs", json={**body, "queue": THEIRS}, headers=BOOT)
    assert held.status_code == 201, held.text
    theirs_id = held.json()["id"]

    async def attempts() -> list[httpx.Response]:
        return [await client.post("/v1/jobs", json={**body, "queue": MINE}, headers=key),
                await client.post("/v1/jobs", json={k: v for k, v in body.items() if k != "idempotency_key"}
                                  | {"queue": MINE}, headers={**key, "idempotency-key": "shared"}),
                await client.post("/v1/jobs/batch", json={"jobs": [{**body, "queue": MINE}]}, headers=key)]

    across = await attempts()
    for response in across:
        assert response.status_code == 422, response.text
        assert theirs_id not in response.text and THEIRS not in response.text, response.text

    # Now the key holds it in its own queue, stored with another body.
    assert (await client.post(f"/v1/executions/{theirs_id}/cancel", headers=BOOT)).status_code == 200
    assert (await client.delete(f"/v1/executions/{theirs_id}", headers=BOOT)).status_code == 204
    own = await client.post("/v1/jobs", json={**body, "payload": {"n": 0}, "queue": MINE}, headers=key)
    assert own.status_code == 201, own.text
    within = await attempts()
    for a, b in zip(across, within, strict=True):
        assert (a.status_code, a.headers["content-type"], a.json()) == \
            (b.status_code, b.headers["content-type"], b.json())
    [single, header, batch] = (r.json() for r in within)
    assert [e["field"] for e in single["errors"]] == [e["field"] for e in header["errors"]] == ["idempotency_key"]
    assert [e["field"] for e in batch["errors"]] == ["jobs[0].idempotency_key"]
