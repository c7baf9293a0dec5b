"""The coordinator against a real database and real servers: node heartbeats, dead-node
recovery (racing scanners, SKIP LOCKED, orphans), deadlines, progress and heartbeat callbacks,
cancelling running work, a trickling handler, and graceful shutdown (DESIGN §2, §5, §6.2)."""

from __future__ import annotations

import asyncio
import time
from datetime import datetime
from typing import Any
from uuid import UUID

import httpx
from aiohttp import web

from app.db.database import Database
from app.db.executions import ExecutionRepository
from tests.repositories import ShortcutRepository
from app.db.handlers import HandlerRepository
from app.domain.executions import NewJob
from app.services.coordination import CoordinationService
from app.db.statements import execute
from tests.conftest import register, settled_scanner, sql, wait_for_state

DEAD = "dead-node-x"
STALE_HEARTBEAT = ("INSERT INTO job_server_heartbeats(server_id, last_heartbeat, started_at) "
                   "VALUES (:node, now() - interval '1 hour', now() - interval '1 hour')")
FRESH_HEARTBEAT = ("INSERT INTO job_server_heartbeats(server_id, last_heartbeat, started_at) "
                   "VALUES (:node, now(), now())")


# --- helpers -------------------------------------------------------------------------------

def status(code: int, body: Any = None):
    async def reply(_: web.Request, __: dict[str, Any]) -> web.StreamResponse:
        return web.json_response(body, status=code)
    return reply


def bearer(token: str | None) -> dict[str, str]:
    return {} if token is None else {"authorization": f"Bearer {token}"}


async def enqueue(api: httpx.AsyncClient, **body: Any) -> dict[str, Any]:
    response = await api.post("/v1/jobs", json=body)
    assert response.status_code == 201, response.text
    return response.json()


async def complete(api: httpx.AsyncClient, job: dict[str, Any], token: str | None = None,
                   **body: Any) -> httpx.Response:
    return await api.post(f"/v1/executions/{job['execution_id']}/complete", json=body,
                          headers=bearer(token or job["callback"]["token"]))


async def progress(api: httpx.AsyncClient, job: dict[str, Any], body: Any = None,
                   token: str | None = "current") -> httpx.Response:
    token = job["callback"]["token"] if token == "current" else token
    return await api.post(f"/v1/executions/{job['execution_id']}/progress", json=body if body is not None else {},
                          headers=bearer(token))


async def heartbeat(api: httpx.AsyncClient, job: dict[str, Any], token: str | None = "current") -> httpx.Response:
    token = job["callback"]["token"] if token == "current" else token
    return await api.post(f"/v1/executions/{job['execution_id']}/heartbeat", headers=bearer(token))


async def history(db: Database, execution_id: str | UUID) -> list[dict[str, Any]]:
    async with db.transaction() as conn:
        return await ExecutionRepository().events(conn, UUID(str(execution_id)))


async def events(db: Database, execution_id: str | UUID) -> list[tuple[str, int]]:
    return [(e["new_state"], e["attempt"]) for e in await history(db, execution_id)]


async def row(db: Database, execution_id: str | UUID):
    async with db.transaction() as conn:
        found = await ExecutionRepository().get(conn, UUID(str(execution_id)))
    assert found is not None
    return found


async def heartbeat_rows(db: Database) -> set[str]:
    return {r[0] for r in await sql(db, "SELECT server_id FROM job_server_heartbeats")}


async def seed(db: Database, node: str, *jobs: NewJob) -> list[UUID]:
    """Insert jobs and claim them all as `node` (they become PROCESSING, locked_by node)."""
    repo = ShortcutRepository()
    async with db.transaction() as conn:
        await HandlerRepository().upsert(conn, name="h", url="http://127.0.0.1:9/h", timeout_seconds=None,
                                         max_concurrency=None, stateful=False, new_secret="whsec_dGVzdA==")
        inserted = await repo.insert_many(conn, list(jobs))
    async with db.transaction() as conn:
        claimed = await repo.claim(conn, node, len(jobs), (), 60)
    ids = [e.id for e in inserted if e is not None]
    assert sorted(c.id for c in claimed) == sorted(ids)
    return ids


def scanner(db: Database, node: str = "scanner-z", batch_size: int = 500) -> CoordinationService:
    return settled_scanner(db, node, batch_size)


async def current(api: httpx.AsyncClient, execution_id: str) -> dict[str, Any]:
    return (await api.get(f"/v1/executions/{execution_id}")).json()


# --- 1. node heartbeats and GET /v1/nodes ----------------------------------------------------

async def test_a_node_heartbeats_from_start_and_lists_its_in_flight_calls(jobwire, handler):
    server = await jobwire(node_name="alpha", heartbeat_interval=0.2)
    release = asyncio.Event()

    async def hang(_: web.Request, __: dict[str, Any]) -> web.StreamResponse:
        await asyncio.wait_for(release.wait(), 10)
        return web.json_response({"result": "done"})

    async with httpx.AsyncClient(base_url=server.url, timeout=10) as api:
        [node] = (await api.get("/v1/nodes")).json()["items"]  # written before the first claim
        assert node["server_id"] == server.app.state.node_id
        assert node["server_id"].startswith("alpha-") and len(node["server_id"]) == len("alpha-") + 8
        assert node["in_flight"] == 0
        started = datetime.fromisoformat(node["started_at"])
        first_beat = datetime.fromisoformat(node["last_heartbeat"])
        assert started <= first_beat

        await register(api, "hangs", handler.route("/hangs", hang))
        job = await enqueue(api, handler="hangs")
        await handler.wait_for(1)
        [busy] = (await api.get("/v1/nodes")).json()["items"]
        assert busy["in_flight"] == 1
        assert datetime.fromisoformat(busy["started_at"]) == started

        release.set()
        await wait_for_state(api, job["id"], "SUCCEEDED")
        await asyncio.sleep(0.3)  # at least one more heartbeat
        [idle] = (await api.get("/v1/nodes")).json()["items"]
        assert idle["in_flight"] == 0
        assert datetime.fromisoformat(idle["last_heartbeat"]) > first_beat


async def test_nodes_lists_live_nodes_only(jobwire, db):
    one = await jobwire(node_name="one")
    two = await jobwire(node_name="two")
    await sql(db, STALE_HEARTBEAT, node=DEAD)
    async with httpx.AsyncClient(base_url=one.url) as api:
        listed = {n["server_id"] for n in (await api.get("/v1/nodes")).json()["items"]}
    assert listed == {one.app.state.node_id, two.app.state.node_id}


# --- 2. dead-node recovery -----------------------------------------------------------------

async def test_dead_node_recovery_retries_dead_letters_and_abandons_cron(db):
    retry, spent, cron = await seed(
        db, DEAD,
        NewJob(handler="h", job_id="retry", max_attempts=3),
        NewJob(handler="h", job_id="spent", max_attempts=1),
        NewJob(handler="h", job_id="cron", max_attempts=3),
    )
    await sql(db, "UPDATE job_executions SET job_type = 'CRON', fire_at = now() WHERE id = :id", id=cron)
    [live] = await seed(db, "live-node-y", NewJob(handler="h", job_id="live"))
    [mine] = await seed(db, "scanner-z", NewJob(handler="h", job_id="mine"))
    await sql(db, STALE_HEARTBEAT, node=DEAD)
    await sql(db, FRESH_HEARTBEAT, node="live-node-y")
    await sql(db, STALE_HEARTBEAT, node="scanner-z")  # even a stale self is never "dead" to itself
    claimed_at = (await row(db, retry)).started_at  # the claim writes no event row (DESIGN §8)

    report = await scanner(db).recover_dead_nodes()
    assert report.recovered == 3 and report.forgotten == [DEAD]

    again = await row(db, retry)
    assert (again.state, again.attempt, again.error_type) == ("ENQUEUED", 1, "abandoned_node")
    assert again.locked_by is None and again.started_at is None and again.deadline_at is None
    [(due,)] = await sql(db, "SELECT scheduled_at <= now() FROM job_executions WHERE id = :id", id=retry)
    assert due
    trail = await history(db, retry)
    # The insert and the claim write no event row (DESIGN §8): the abandonment is the first, and it
    # names the start of the attempt it ends.
    assert [(e["new_state"], e["attempt"]) for e in trail] == [("ABANDONED", 0), ("ENQUEUED", 1)]
    assert trail[0]["error_type"] == "abandoned_node"
    assert claimed_at is not None and datetime.fromisoformat(trail[0]["started_at"]) == claimed_at

    dead = await row(db, spent)
    assert (dead.state, dead.attempt, dead.error_type) == ("DEAD_LETTER", 0, "abandoned_node")
    assert await events(db, spent) == [("ABANDONED", 0), ("DEAD_LETTER", 0)]

    abandoned = await row(db, cron)
    assert (abandoned.state, abandoned.attempt, abandoned.error_type) == ("ABANDONED", 0, "abandoned_node")
    assert await events(db, cron) == [("ABANDONED", 0)]

    for untouched, node in ((live, "live-node-y"), (mine, "scanner-z")):
        held = await row(db, untouched)
        assert (held.state, held.attempt, held.locked_by) == ("PROCESSING", 0, node)
        assert await events(db, untouched) == []  # neither its insert nor its claim wrote one
    assert await heartbeat_rows(db) == {"live-node-y", "scanner-z"}

    # Nothing left to do: a second scan changes nothing.
    assert (await scanner(db).recover_dead_nodes()).recovered == 0
    assert (await row(db, retry)).attempt == 1


async def test_racing_scanners_end_each_attempt_exactly_once(db):
    ids = await seed(db, DEAD, *[NewJob(handler="h", job_id=f"j{i}") for i in range(300)])
    await sql(db, STALE_HEARTBEAT, node=DEAD)

    reports = await asyncio.gather(*[scanner(db, f"scanner-{i}", batch_size=25).recover_dead_nodes()
                                     for i in range(4)])
    assert sum(r.recovered for r in reports) == 300
    assert sum(r.recovered > 0 for r in reports) >= 2  # they did share the work
    assert sum(DEAD in r.forgotten for r in reports) == 1

    rows = await sql(db, "SELECT state, attempt, count(*) FROM job_executions GROUP BY state, attempt")
    assert [tuple(r) for r in rows] == [("ENQUEUED", 1, 300)]
    counts = await sql(db, """
        SELECT e.id, count(*) FILTER (WHERE v.event->>'new_state' = 'ABANDONED'),
               count(*) FILTER (WHERE v.event->>'new_state' = 'ENQUEUED' AND (v.event->>'attempt')::int = 1),
               count(*)
        FROM job_executions e JOIN job_events v ON v.execution_id = e.id
        GROUP BY e.id""")
    assert len(counts) == len(ids)
    # One ABANDONED and one ENQUEUED each, and nothing else (the insert and the claim write none).
    assert all((abandoned, enqueued, total) == (1, 1, 2) for _, abandoned, enqueued, total in counts)
    assert DEAD not in await heartbeat_rows(db)


async def test_the_heartbeat_row_is_kept_until_every_recovery_committed(db):
    ids = await seed(db, DEAD, *[NewJob(handler="h", job_id=f"j{i}") for i in range(5)])
    await sql(db, STALE_HEARTBEAT, node=DEAD)
    held = ids[0]

    async with db.pool.acquire() as other:
        txn = other.transaction()
        await txn.start()
        await execute(other, "SELECT id FROM job_executions WHERE id = :id FOR UPDATE", id=held)
        report = await scanner(db).recover_dead_nodes()
        assert report.recovered == 4 and report.forgotten == []
        assert DEAD in await heartbeat_rows(db)
        assert (await row(db, held)).state == "PROCESSING"
        await txn.rollback()

    report = await scanner(db).recover_dead_nodes()
    assert report.recovered == 1 and report.forgotten == [DEAD]
    again = await row(db, held)
    assert (again.state, again.attempt) == ("ENQUEUED", 1)
    assert DEAD not in await heartbeat_rows(db)
    assert [(await row(db, i)).attempt for i in ids] == [1] * 5


async def test_a_forgotten_node_takes_its_every_instance_firing_cursors_along(db):
    # Node ids are never reused: the cursors of a gone node would stay forever, one per schedule.
    await sql(db, "INSERT INTO job_schedules (job_id, cron_expression, handler, execution_mode) VALUES "
                  "('every', '* * * * *', 'h', 'EVERY_INSTANCE'), ('single', '* * * * *', 'h', 'SINGLE_INSTANCE')")
    await sql(db, "INSERT INTO job_schedule_fires (job_id, fire_node, handled_until) VALUES "
                  "('every', :dead, now()), ('every', 'live-node', now()), ('single', '', now())", dead=DEAD)
    await sql(db, STALE_HEARTBEAT, node=DEAD)
    await sql(db, FRESH_HEARTBEAT, node="live-node")

    report = await scanner(db).recover_dead_nodes()
    assert report.forgotten == [DEAD]
    cursors = await sql(db, "SELECT job_id, fire_node FROM job_schedule_fires ORDER BY job_id, fire_node")
    assert [tuple(r) for r in cursors] == [("every", "live-node"), ("single", "")]


async def test_an_orphan_without_a_heartbeat_row_is_recovered(db):
    [orphan] = await seed(db, "vanished-node", NewJob(handler="h", job_id="orphan"))
    [mine] = await seed(db, "scanner-z", NewJob(handler="h", job_id="mine"))  # no row of its own either
    report = await scanner(db).recover_dead_nodes()
    assert report.recovered == 1
    recovered = await row(db, orphan)
    assert (recovered.state, recovered.attempt, recovered.error_type) == ("ENQUEUED", 1, "abandoned_node")
    assert await events(db, orphan) == [("ABANDONED", 0), ("ENQUEUED", 1)]
    assert (await row(db, mine)).state == "PROCESSING"
    assert await heartbeat_rows(db) == set()


# --- 6. deadlines --------------------------------------------------------------------------

async def keep_alive(api: httpx.AsyncClient, job: dict[str, Any], every: float, stop: asyncio.Event) -> list[bool]:
    """Heartbeat an accepted attempt until stopped (or told to cancel); returns the answers."""
    answers: list[bool] = []
    while not stop.is_set():
        response = await heartbeat(api, job)
        assert response.status_code == 200, response.text
        answers.append(response.json()["cancel_requested"])
        if answers[-1]:
            break
        try:
            await asyncio.wait_for(stop.wait(), every)
        except TimeoutError:
            pass
    return answers


async def test_a_silent_accepted_attempt_is_abandoned_at_its_deadline_and_retried(jobwire, handler, db):
    server = await jobwire(scan_interval=0.2)
    stop = asyncio.Event()
    alive: list[asyncio.Task[list[bool]]] = []
    async with httpx.AsyncClient(base_url=server.url, timeout=10) as api:
        async def accept(_: web.Request, job: dict[str, Any]) -> web.StreamResponse:
            if job["attempt"] >= 1:  # the second attempt keeps itself alive while the test checks
                alive.append(asyncio.create_task(keep_alive(api, job, 0.1, stop)))
            return web.json_response(None, status=202)

        await register(api, "quiet", handler.route("/quiet", accept))
        job = await enqueue(api, handler="quiet", timeout_seconds=0.5, max_attempts=3)
        try:
            await handler.wait_for(2)
            first, second = handler.received
            assert (first["attempt"], second["attempt"]) == (0, 1)
            trail = await history(db, job["id"])
            # The insert and the claims write no event row (DESIGN §8); the second claim is the
            # second call the handler received.
            assert [(e["new_state"], e["attempt"]) for e in trail[:2]] == [("ABANDONED", 0), ("ENQUEUED", 1)]
            assert trail[0]["error_type"] == "abandoned_deadline"

            stale = await complete(api, first, outcome="succeeded", result="old")
            assert stale.status_code == 409
            assert stale.headers["content-type"] == "application/problem+json"
            unchanged = await current(api, job["id"])
            assert (unchanged["state"], unchanged["attempt"], unchanged["result"]) == ("PROCESSING", 1, None)

            done = await complete(api, second, outcome="succeeded", result="new")
            assert done.status_code == 200
            assert (done.json()["state"], done.json()["attempt"], done.json()["result"]) == ("SUCCEEDED", 1, "new")
        finally:
            stop.set()
            answers = (await asyncio.gather(*alive, return_exceptions=True) or [None])[0]
    assert isinstance(answers, list) and answers and not any(answers[:-1]), answers
    assert len(handler.received) == 2
    assert (await events(db, job["id"]))[-1] == ("SUCCEEDED", 1)


async def test_deadlines_spend_attempts_into_dead_letter_and_a_late_success_wins(jobwire, handler, db):
    server = await jobwire(scan_interval=0.2)
    async with httpx.AsyncClient(base_url=server.url, timeout=10) as api:
        await register(api, "quiet", handler.route("/quiet", status(202)))
        job = await enqueue(api, handler="quiet", timeout_seconds=0.5, max_attempts=2)
        dead = await wait_for_state(api, job["id"], "DEAD_LETTER")
        assert (dead["attempt"], dead["error_type"]) == (1, "abandoned_deadline")
        assert await events(db, job["id"]) == [  # the insert and the claims write none (DESIGN §8)
            ("ABANDONED", 0), ("ENQUEUED", 1), ("ABANDONED", 1), ("DEAD_LETTER", 1)]
        assert [r["attempt"] for r in handler.received] == [0, 1]

        assert (await complete(api, handler.received[0], outcome="succeeded")).status_code == 409
        late = await complete(api, handler.received[1], outcome="succeeded", result={"late": True})
        assert late.status_code == 200
        assert (late.json()["state"], late.json()["result"]) == ("SUCCEEDED", {"late": True})
        assert (await events(db, job["id"]))[-1] == ("SUCCEEDED", 1)


# --- 7. progress and heartbeat callbacks ---------------------------------------------------

async def test_progress_snapshots_merge_and_extend_the_deadline(api, handler):
    await register(api, "accepts", handler.route("/accepts", status(202)))
    job = await enqueue(api, handler="accepts", timeout_seconds=30)
    await handler.wait_for(1)
    sent = handler.received[0]
    before = await wait_for_state(api, job["id"], "PROCESSING")
    assert before["progress"] is None  # none reported yet

    async def shown() -> dict[str, Any]:
        return (await current(api, job["id"]))["progress"]

    answer = await progress(api, sent, {"total": 10, "succeeded": 3})
    assert answer.status_code == 200 and answer.json() == {"cancel_requested": False}
    assert await shown() == {"total": 10, "succeeded": 3, "failed": 0, "status": None, "percentage": 30}
    assert (await progress(api, sent, {"failed": 2, "status": "halfway"})).status_code == 200
    assert await shown() == {"total": 10, "succeeded": 3, "failed": 2, "status": "halfway", "percentage": 50}
    assert (await progress(api, sent, {"total": 3, "succeeded": 0, "failed": 1})).status_code == 200
    assert (await shown())["percentage"] == 33  # floor(1 * 100 / 3)
    assert (await progress(api, sent, {"total": 0})).status_code == 200
    assert await shown() == {"total": 0, "succeeded": 0, "failed": 1, "status": "halfway", "percentage": 0}
    assert (await progress(api, sent, {})).json() == {"cancel_requested": False}  # a snapshot of nothing
    assert (await shown())["status"] == "halfway"

    deadline = datetime.fromisoformat((await current(api, job["id"]))["deadline_at"])
    for call in (lambda: progress(api, sent, {"succeeded": 1}), lambda: heartbeat(api, sent)):
        await asyncio.sleep(0.05)
        response = await call()
        assert response.status_code == 200 and response.json() == {"cancel_requested": False}
        later = datetime.fromisoformat((await current(api, job["id"]))["deadline_at"])
        assert later > deadline
        deadline = later
    assert (await current(api, job["id"]))["state"] == "PROCESSING"


async def test_progress_rejects_bad_tokens_stale_attempts_and_bad_bodies(api, handler):
    await register(api, "accepts", handler.route("/accepts", status(202)))
    job = await enqueue(api, handler="accepts", max_attempts=3)
    await handler.wait_for(1)
    first = handler.received[0]

    assert (await progress(api, first, {"total": 1}, token=None)).status_code == 401
    assert (await heartbeat(api, first, token=None)).status_code == 401
    forged = "0." + "A" * 43
    assert (await progress(api, first, {"total": 1}, token=forged)).status_code == 403
    assert (await heartbeat(api, first, token=forged)).status_code == 403
    for bad in ({"total": -1}, {"succeeded": -5}, {"unknown": 1}, {"total": "5"}, {"status": 5}, [1]):
        response = await progress(api, first, bad)
        assert response.status_code == 422, (bad, response.text)
        assert response.headers["content-type"] == "application/problem+json"
        assert response.json()["errors"]
    assert (await current(api, job["id"]))["progress"] is None  # nothing stored

    # A retryable failure moves the execution on to attempt 1: attempt 0's token is stale now.
    assert (await complete(api, first, outcome="failed", error={"message": "again"})).json()["attempt"] == 1
    await handler.wait_for(2)
    second = handler.received[1]
    assert second["attempt"] == 1
    assert (await progress(api, first, {"total": 5})).status_code == 409
    assert (await heartbeat(api, first)).status_code == 409
    assert (await progress(api, second, {"total": 5})).json() == {"cancel_requested": False}
    assert (await current(api, job["id"]))["progress"]["total"] == 5


async def test_heartbeats_keep_an_accepted_attempt_alive_past_its_timeout(jobwire, handler, db):
    server = await jobwire(scan_interval=0.2)
    async with httpx.AsyncClient(base_url=server.url, timeout=10) as api:
        await register(api, "accepts", handler.route("/accepts", status(202)))
        job = await enqueue(api, handler="accepts", timeout_seconds=0.6)
        await handler.wait_for(1)
        sent = handler.received[0]
        stop = asyncio.Event()
        beating = asyncio.create_task(keep_alive(api, sent, 0.2, stop))
        await asyncio.sleep(2.5)
        still = await current(api, job["id"])
        stop.set()
        answers = await beating
        assert (still["state"], still["attempt"]) == ("PROCESSING", 0)
        assert len(answers) >= 8 and not any(answers)
        done = await complete(api, sent, outcome="succeeded", result=1)
        assert done.json()["state"] == "SUCCEEDED"
    assert len(handler.received) == 1  # never abandoned and dispatched again
    assert await events(db, job["id"]) == [("SUCCEEDED", 0)]  # the insert and the claim write none


async def test_max_duration_caps_an_attempt_despite_heartbeats(jobwire, handler, db):
    server = await jobwire(scan_interval=0.2)
    async with httpx.AsyncClient(base_url=server.url, timeout=10) as api:
        await register(api, "accepts", handler.route("/accepts", status(202)))
        job = await enqueue(api, handler="accepts", timeout_seconds=0.6, max_duration_seconds=1.2, max_attempts=1)
        await handler.wait_for(1)
        began = time.monotonic()
        answers = await asyncio.wait_for(keep_alive(api, handler.received[0], 0.2, asyncio.Event()), 5)
        elapsed = time.monotonic() - began
        assert answers[-1] is True and not any(answers[:-1])  # told to stop once abandoned
        assert 0.9 < elapsed < 2.5, elapsed
        dead = await current(api, job["id"])
    assert (dead["state"], dead["error_type"]) == ("DEAD_LETTER", "abandoned_deadline")
    started, deadline = (datetime.fromisoformat(dead[k]) for k in ("started_at", "deadline_at"))
    assert abs((deadline - started).total_seconds() - 1.2) < 1e-3  # capped at started_at + max_duration
    assert await events(db, job["id"]) == [("ABANDONED", 0), ("DEAD_LETTER", 0)]  # no insert's, no claim's


# --- 8. cancelling running work --------------------------------------------------------------

async def test_cancelling_accepted_work_is_reported_to_the_handler_and_wins_over_its_success(api, handler, db):
    await register(api, "accepts", handler.route("/accepts", status(202)))
    job = await enqueue(api, handler="accepts")
    await handler.wait_for(1)
    sent = handler.received[0]
    await wait_for_state(api, job["id"], "PROCESSING")
    assert (await heartbeat(api, sent)).json() == {"cancel_requested": False}

    cancelled = await api.post(f"/v1/executions/{job['id']}/cancel")
    assert cancelled.status_code == 200 and cancelled.json()["state"] == "CANCELLED"
    answer = await progress(api, sent, {"total": 4, "succeeded": 1})
    assert answer.status_code == 200 and answer.json() == {"cancel_requested": True}
    assert (await heartbeat(api, sent)).json() == {"cancel_requested": True}

    late = await complete(api, sent, outcome="succeeded", result="finished anyway")
    assert late.status_code == 200
    assert (late.json()["state"], late.json()["result"]) == ("CANCELLED", None)
    assert (await current(api, job["id"]))["state"] == "CANCELLED"
    assert await events(db, job["id"]) == [("CANCELLED", 0)]  # the insert and the claim write none


# --- 9. a trickling handler ------------------------------------------------------------------

async def test_a_handler_trickling_its_body_is_cut_off_at_the_deadline(api, handler):
    async def trickle(request: web.Request, __: dict[str, Any]) -> web.StreamResponse:
        response = web.StreamResponse(status=200)
        await response.prepare(request)
        try:
            for _ in range(50):
                await response.write(b" ")
                await asyncio.sleep(0.1)
        except (ConnectionError, RuntimeError):
            pass  # the caller hung up
        return response

    await register(api, "trickle", handler.route("/trickle", trickle))
    began = time.monotonic()
    job = await enqueue(api, handler="trickle", timeout_seconds=0.5, max_attempts=1)
    dead = await wait_for_state(api, job["id"], "DEAD_LETTER", timeout=4)
    assert dead["error_type"] == "abandoned_deadline"
    assert time.monotonic() - began < 4  # not the 5 s the body would take


# --- 10. graceful shutdown -------------------------------------------------------------------

async def test_shutdown_abandons_a_call_still_open_after_the_grace_and_forgets_the_node(jobwire, handler, db):
    server = await jobwire(shutdown_grace=0.5)
    release = asyncio.Event()

    async def hang(_: web.Request, __: dict[str, Any]) -> web.StreamResponse:
        try:
            await asyncio.wait_for(release.wait(), 10)
        except TimeoutError:
            pass
        return web.json_response({"result": "too late"})

    try:
        async with httpx.AsyncClient(base_url=server.url, timeout=10) as api:
            await register(api, "hangs", handler.route("/hangs", hang))
            job = await enqueue(api, handler="hangs", max_attempts=3)
            await handler.wait_for(1)
        assert await heartbeat_rows(db) == {server.app.state.node_id}
        began = time.monotonic()
        await server.stop()
        assert time.monotonic() - began < 5
    finally:
        release.set()

    left = await row(db, job["id"])
    assert (left.state, left.attempt, left.error_type) == ("ENQUEUED", 1, "abandoned_shutdown")
    assert left.locked_by is None
    assert await events(db, job["id"]) == [("ABANDONED", 0), ("ENQUEUED", 1)]
    assert await heartbeat_rows(db) == set()


async def test_shutdown_lets_a_short_call_finish_during_the_drain(jobwire, handler, db):
    server = await jobwire(shutdown_grace=5)

    async def slow(_: web.Request, __: dict[str, Any]) -> web.StreamResponse:
        await asyncio.sleep(0.3)
        return web.json_response({"result": "drained"})

    async with httpx.AsyncClient(base_url=server.url, timeout=10) as api:
        await register(api, "slow", handler.route("/slow", slow))
        job = await enqueue(api, handler="slow")
        await handler.wait_for(1)
    await server.stop()

    done = await row(db, job["id"])
    assert (done.state, done.attempt, done.result) == ("SUCCEEDED", 0, "drained")
    assert len(handler.received) == 1
    assert await events(db, job["id"]) == [("SUCCEEDED", 0)]  # the insert and the claim write none
    assert await heartbeat_rows(db) == set()
