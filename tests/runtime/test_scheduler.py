"""Firing cron schedules (DESIGN §6.3) against a real database: several in-process nodes racing
(one execution per instant), EVERY_INSTANCE (one per node), overlap SKIP and QUEUE_ONE, misfires
without flooding, updates and deletes seen within a tick, and, through a real server and handler,
fire_at through a retry, the schedule's health, tracked: false and metadata copied."""

from __future__ import annotations

import asyncio
from collections import Counter
from datetime import UTC, datetime, timedelta
from typing import Any

from aiohttp import web

from app.db.database import Database
from app.db.handlers import HandlerRepository
from app.domain.schedules import ExecutionMode, MisfirePolicy, OverlapPolicy, ScheduleSpec
from app.services.schedules import ScheduleLimits, ScheduleService
from app.services.scheduling import SchedulingConfig, SchedulingService, TickReport
from tests.conftest import register, settled_scanner, sql

EVERY_SECOND = "*/1 * * * * *"


async def declare(db: Database, job_id: str = "tick", **spec: Any) -> ScheduleService:
    async with db.transaction() as conn:
        await HandlerRepository().upsert(conn, name="h", url="http://127.0.0.1:9/h", timeout_seconds=None,
                                         max_concurrency=None, stateful=False, new_secret="whsec_dGVzdA==")
    service = ScheduleService(db, ScheduleLimits(1_000_000))
    await service.put(job_id, ScheduleSpec(**{"cron": EVERY_SECOND, "handler": "h", **spec}))
    return service


def node(db: Database, name: str, threshold: float = 60.0) -> SchedulingService:
    return SchedulingService(db, SchedulingConfig(node_id=name, misfire_threshold=threshold))


async def fires(db: Database, job_id: str = "tick") -> list[tuple[datetime, str, str]]:
    rows = await sql(db, "SELECT fire_at, fire_node, state FROM job_executions WHERE job_id = :j ORDER BY fire_at",
                     j=job_id)
    return [(r[0], r[1], r[2]) for r in rows]


async def finish_all(db: Database) -> None:
    """A handler that finishes at once: every ENQUEUED CRON row becomes SUCCEEDED."""
    await sql(db, "UPDATE job_executions SET state = 'SUCCEEDED', completed_at = now() WHERE state = 'ENQUEUED'")


async def run_for(seconds: float, nodes: list[SchedulingService], db: Database, *,
                  finish: bool = True) -> list[TickReport]:
    """Tick every node every 0.2 s (as the loop would, but faster) for `seconds`."""
    reports: list[TickReport] = []
    deadline = asyncio.get_running_loop().time() + seconds
    while asyncio.get_running_loop().time() < deadline:
        reports.extend(await asyncio.gather(*(n.tick() for n in nodes)))
        if finish:
            await finish_all(db)
        await asyncio.sleep(0.2)
    return reports


def consecutive(instants: list[datetime]) -> bool:
    return all(b - a == timedelta(seconds=1) for a, b in zip(instants, instants[1:], strict=False))


async def test_racing_nodes_make_exactly_one_execution_per_instant_none_missing(db):
    await declare(db)
    nodes = [node(db, f"n{i}") for i in range(4)]
    await run_for(3.5, nodes, db)
    made = await fires(db)
    instants = [f[0] for f in made]
    assert len(instants) >= 3
    assert Counter(instants).most_common(1)[0][1] == 1  # one per instant
    assert consecutive(instants)  # none missing
    assert all(t.microsecond == 0 and node_ == "" for t, node_, _ in made)
    rows = await sql(db, "SELECT fire_at, scheduled_at, job_type FROM job_executions")
    assert all(fire_at == scheduled_at and kind == "CRON" for fire_at, scheduled_at, kind in rows)


async def test_every_instance_makes_one_execution_per_node_per_instant(db):
    await declare(db, execution_mode=ExecutionMode.EVERY_INSTANCE)
    nodes = [node(db, f"n{i}") for i in range(3)]
    await asyncio.gather(*(n.tick() for n in nodes))  # each node's first tick: it fires from now on
    await run_for(3.0, nodes, db)
    made = await fires(db)
    per_instant: dict[datetime, list[str]] = {}
    for fire_at, fire_node, _ in made:
        per_instant.setdefault(fire_at, []).append(fire_node)
    complete = [t for t, who in per_instant.items() if sorted(who) == ["n0", "n1", "n2"]]
    assert len(complete) >= 2
    assert all(len(who) == len(set(who)) for who in per_instant.values())  # never twice for one node


async def test_an_every_instance_node_that_skips_an_instant_never_delays_another_nodes_fire(db):
    """n0's first fire never finishes, so n0 skips every later instant (overlap SKIP); n1 finishes
    each of its fires. n0 ticks first every time: whether an instant is due for n1 is decided by
    n1's own cursor, so n1 fires every instant on time."""
    await declare(db, cron="*/2 * * * * *", execution_mode=ExecutionMode.EVERY_INSTANCE)
    n0, n1 = node(db, "n0"), node(db, "n1")
    await n0.tick()
    await n1.tick()
    deadline = asyncio.get_running_loop().time() + 6.5
    while asyncio.get_running_loop().time() < deadline:
        await n0.tick()
        await n1.tick()
        await sql(db, "UPDATE job_executions SET state = 'SUCCEEDED', completed_at = now() "
                      "WHERE state = 'ENQUEUED' AND fire_node = 'n1'")
        await asyncio.sleep(0.2)
    rows = await sql(db, "SELECT fire_at, created_at, fire_node FROM job_executions ORDER BY fire_at")
    mine = [(fire_at, created_at) for fire_at, created_at, who in rows if who == "n1"]
    assert len(mine) >= 3
    assert all(b - a == timedelta(seconds=2) for (a, _), (b, _) in zip(mine, mine[1:], strict=False)), mine
    late = max((created_at - fire_at).total_seconds() for fire_at, created_at in mine)
    # A delay by n0 would cost n1 a whole period (2 s); the loop itself ticks every 0.2 s, and a
    # busy CI host has been seen to take 0.65 s for a round: half a period tells the two apart.
    assert late < 1.0, f"n1 fired {late:.2f}s after an instant"
    assert sum(1 for *_, who in rows if who == "n0") == 1  # n0 skipped while its first fire ran


async def test_overlap_skip_makes_no_new_fire_while_the_previous_is_unfinished(db):
    await declare(db)
    n = node(db, "n0")
    reports = await run_for(2.5, [n], db, finish=False)
    assert len(await fires(db)) == 1  # the first stays ENQUEUED: every later instant is skipped
    assert sum(r.skipped for r in reports) >= 1
    await finish_all(db)
    await asyncio.sleep(1.05)
    await n.tick()
    assert len(await fires(db)) == 2  # one new fire, whatever was due meanwhile


async def test_overlap_queue_one_holds_one_fire_back_until_the_previous_ends(db):
    await declare(db, overlap_policy=OverlapPolicy.QUEUE_ONE)
    n = node(db, "n0")
    await run_for(2.5, [n], db, finish=False)
    made = await fires(db)
    assert len(made) == 1
    [(held,)] = await sql(db, "SELECT pending_fire_at FROM job_schedule_fires")
    assert held is not None and held > made[0][0]
    await finish_all(db)
    report = await n.tick()
    # The held instant fires at once, with its own fire_at; only one, not one per skipped instant.
    assert [e.scheduled_at for e in report.fired][:1] == [held]
    assert len(await fires(db)) == 2


async def test_a_misfire_with_fire_once_makes_one_catch_up_for_the_latest_missed_instant(db):
    await declare(db, "yearly", cron="0 0 0 1 1 *")
    await sql(db, "UPDATE job_schedules SET updated_at = now() - interval '800 days', next_fire_at = now()")
    report = await node(db, "n0").tick()
    [(now,)] = await sql(db, "SELECT now()")
    assert report.missed == ["yearly"]
    made = await fires(db, "yearly")
    assert [f[0] for f in made] == [datetime(now.year, 1, 1, tzinfo=UTC)]
    await node(db, "n1").tick()  # another node, later: nothing more
    assert len(await fires(db, "yearly")) == 1
    [(next_fire,)] = await sql(db, "SELECT next_fire_at FROM job_schedules")
    assert next_fire == datetime(now.year + 1, 1, 1, tzinfo=UTC)


async def test_a_misfire_with_skip_waits_for_the_next_instant(db):
    await declare(db, "yearly", cron="0 0 0 1 1 *", misfire_policy=MisfirePolicy.SKIP)
    await sql(db, "UPDATE job_schedules SET updated_at = now() - interval '800 days', next_fire_at = now()")
    report = await node(db, "n0").tick()
    assert report.missed == ["yearly"] and report.fired == []
    assert await fires(db, "yearly") == []


async def test_a_short_outage_misfires_without_flooding(db):
    # Every second, nodes down for 30 s, threshold 5 s: one catch-up + at most the on-time instants.
    await declare(db, overlap_policy=OverlapPolicy.QUEUE_ONE)
    await sql(db, "UPDATE job_schedules SET updated_at = now() - interval '30 seconds', next_fire_at = now()")
    await node(db, "n0", threshold=5).tick()
    made = await fires(db)
    assert len(made) == 1  # the catch-up; the on-time instants wait behind it (QUEUE_ONE holds one)
    [(held,)] = await sql(db, "SELECT pending_fire_at FROM job_schedule_fires")
    assert held is not None


async def test_an_update_or_delete_is_seen_by_every_node_at_its_next_tick(db):
    service = await declare(db)
    nodes = [node(db, "n0"), node(db, "n1")]
    await run_for(1.5, nodes, db)
    before = len(await fires(db))
    assert before >= 1
    await service.put("tick", ScheduleSpec(cron="0 0 0 1 1 *", handler="h"))  # yearly now
    await run_for(1.5, nodes, db)
    assert len(await fires(db)) == before
    await service.put("tick", ScheduleSpec(cron=EVERY_SECOND, handler="h", payload={"v": 2}))
    await run_for(1.5, nodes, db)
    payloads = [r[0] for r in await sql(db, "SELECT payload FROM job_executions ORDER BY fire_at")]
    assert payloads[-1] == {"v": 2} and len(payloads) > before
    await service.delete("tick")
    count = len(payloads)
    await run_for(1.5, nodes, db)
    assert len(await fires(db)) == count


async def test_a_new_schedule_fires_only_instants_after_its_updated_at(db):
    await declare(db, "hourly", cron="0 0 * * * *")
    report = await node(db, "n0").tick()
    assert report.fired == [] and report.missed == []


async def test_trigger_is_exempt_from_overlap(db):
    service = await declare(db)
    n = node(db, "n0")
    await run_for(1.2, [n], db, finish=False)
    assert len(await fires(db)) == 1
    triggered = await service.trigger("tick")
    assert triggered.state.value == "ENQUEUED" and len(await fires(db)) == 2


# --- through a real server and a real handler ------------------------------------------------

async def cron_rows(db: Database, job_id: str) -> list[dict[str, Any]]:
    rows = await sql(db, "SELECT id, fire_at, scheduled_at, state, attempt, metadata FROM job_executions "
                         "WHERE job_id = :j ORDER BY fire_at", j=job_id)
    return [dict(r) for r in rows]


async def wait_until(predicate, timeout: float = 10.0) -> None:
    for _ in range(int(timeout / 0.05)):
        if await predicate():
            return
        await asyncio.sleep(0.05)
    raise AssertionError("condition not met in time")


async def test_fire_at_stays_exact_through_a_retry_and_metadata_reaches_the_handler(jobwire, handler, db):
    server = await jobwire(scheduler_interval=0.25)
    calls: Counter[str] = Counter()

    async def fail_first(_: web.Request, job: dict[str, Any]) -> web.StreamResponse:
        calls[job["execution_id"]] += 1
        return web.json_response({}, status=500 if calls[job["execution_id"]] == 1 else 200)

    import httpx
    async with httpx.AsyncClient(base_url=server.url, timeout=10) as api:
        await register(api, "flaky", handler.route("/flaky", fail_first))
        put = await api.put("/v1/schedules/retrying", json={
            "cron": EVERY_SECOND, "handler": "flaky", "metadata": {"context": {"tenant": "t1"}}})
        assert put.status_code == 201

        async def one_succeeded() -> bool:
            return any(r["state"] == "SUCCEEDED" for r in await cron_rows(db, "retrying"))
        await wait_until(one_succeeded)
        await api.put("/v1/schedules/retrying", json={
            "cron": EVERY_SECOND, "handler": "flaky", "enabled": False, "metadata": {"context": {"tenant": "t1"}}})
    done = next(r for r in await cron_rows(db, "retrying") if r["state"] == "SUCCEEDED")
    assert done["attempt"] == 1 and done["fire_at"].microsecond == 0
    assert done["scheduled_at"] > done["fire_at"]  # the retry moved scheduled_at, never fire_at
    # A cron fire is inserted by schedule_fire (app/db/sql/schedules.sql), not jobwire_enqueue, and
    # that insert still writes its ENQUEUED event row (revision 20261203_0021 left it as it was).
    events = await sql(db, "SELECT event FROM job_events WHERE execution_id = :id ORDER BY id", id=done["id"])
    first = events[0][0]
    assert first["new_state"] == "ENQUEUED" and first["job_type"] == "CRON"
    assert datetime.fromisoformat(first["scheduled_at"]) == done["fire_at"]
    assert first["metadata"] == {"context": {"tenant": "t1"}}
    sent = next(j for j in handler.received if j["execution_id"] == str(done["id"]))
    assert sent["metadata"] == {"context": {"tenant": "t1"}}


async def test_the_schedule_health_counts_failures_and_resets_on_success(jobwire, handler, db):
    server = await jobwire(scheduler_interval=0.25)
    outcome = {"status": 500}

    async def reply(_: web.Request, __: dict[str, Any]) -> web.StreamResponse:
        return web.json_response({}, status=outcome["status"])

    import httpx
    async with httpx.AsyncClient(base_url=server.url, timeout=10) as api:
        await register(api, "health", handler.route("/health", reply))
        await api.put("/v1/schedules/h1", json={"cron": EVERY_SECOND, "handler": "health", "max_attempts": 1})

        async def failures(n: int):
            async def check() -> bool:
                return (await api.get("/v1/schedules/h1")).json()["consecutive_failures"] >= n
            return check
        await wait_until(await failures(2))
        shown = (await api.get("/v1/schedules/h1")).json()
        assert shown["last_failure_at"] is not None and shown["last_success_at"] is None
        outcome["status"] = 200

        async def reset() -> bool:
            body = (await api.get("/v1/schedules/h1")).json()
            return body["consecutive_failures"] == 0 and body["last_success_at"] is not None
        await wait_until(reset)
        await api.put("/v1/schedules/h1", json={"cron": EVERY_SECOND, "handler": "health", "max_attempts": 1,
                                                "enabled": False})
    states = {r["state"] for r in await cron_rows(db, "h1")}
    assert "DEAD_LETTER" in states and "SUCCEEDED" in states


async def test_untracked_schedules_keep_no_succeeded_history(jobwire, handler, db):
    server = await jobwire(scheduler_interval=0.25)
    import httpx
    async with httpx.AsyncClient(base_url=server.url, timeout=10) as api:
        await register(api, "quiet", handler.route("/quiet", lambda _r, _j: _ok()))
        await api.put("/v1/schedules/q", json={"cron": EVERY_SECOND, "handler": "quiet", "tracked": False})
        await handler.wait_for(3)
        await api.put("/v1/schedules/q", json={"cron": EVERY_SECOND, "handler": "quiet", "tracked": False,
                                               "enabled": False})
    rows = await cron_rows(db, "q")
    # Successes are deleted (with their events) at the schedule's next fire: at most the last one remains.
    assert len([r for r in rows if r["state"] == "SUCCEEDED"]) <= 1
    [(orphans,)] = await sql(db, "SELECT count(*) FROM job_events ev WHERE NOT EXISTS "
                                 "(SELECT 1 FROM job_executions e WHERE e.id = ev.execution_id)")
    assert orphans == 0


async def _ok() -> web.StreamResponse:
    return web.json_response({"result": None})


async def test_a_cron_attempt_abandoned_by_a_dead_node_stays_abandoned_counts_and_the_next_fire_runs(db):
    from app.db.executions import ExecutionRepository

    await declare(db, max_attempts=5)
    n = node(db, "n0")
    await run_for(1.2, [n], db, finish=False)
    async with db.transaction() as conn:
        [claimed] = await ExecutionRepository().claim(conn, "dead-node", 10, (), 60)
    await sql(db, "INSERT INTO job_server_heartbeats(server_id, last_heartbeat, started_at) "
                  "VALUES ('dead-node', now() - interval '1 hour', now() - interval '1 hour')")
    scan = settled_scanner(db, "scanner")
    assert (await scan.recover_dead_nodes()).recovered == 1
    [(state, attempt)] = await sql(db, "SELECT state, attempt FROM job_executions WHERE id = :id", id=claimed.id)
    assert (state, attempt) == ("ABANDONED", 0)  # not retried within its row: the schedule fires again
    [(failures, last_failure)] = await sql(db, "SELECT consecutive_failures, last_failure_at FROM job_schedules")
    assert failures == 1 and last_failure is not None
    await asyncio.sleep(1.05)
    report = await n.tick()
    assert len(report.fired) == 1  # ABANDONED is finished: the next instant is not an overlap


async def _slow_schedule_timeline(jobwire, handler, overlap: str) -> list[tuple[float, float, str]]:
    """A real server and a handler slower (2.2 s) than its every-second schedule, for ~5.5 s."""
    import httpx

    server = await jobwire(scheduler_interval=0.25)
    calls: list[tuple[float, float, str]] = []
    loop = asyncio.get_running_loop()

    async def slow(_: web.Request, job: dict[str, Any]) -> web.StreamResponse:
        started = loop.time()
        await asyncio.sleep(2.2)
        calls.append((started, loop.time(), job["execution_id"]))
        return web.json_response({"result": None})

    async with httpx.AsyncClient(base_url=server.url, timeout=10) as api:
        await register(api, "slow", handler.route("/slow", slow))
        assert (await api.put(f"/v1/schedules/slow-{overlap}", json={
            "cron": EVERY_SECOND, "handler": "slow", "overlap_policy": overlap})).status_code == 201
        for _ in range(200):  # until three calls have finished (about 7 s)
            if len(calls) >= 3:
                break
            await asyncio.sleep(0.05)
        await api.delete(f"/v1/schedules/slow-{overlap}")
    return calls


def _overlaps(calls: list[tuple[float, float, str]]) -> bool:
    ordered = sorted(calls)
    return any(b[0] < a[1] for a, b in zip(ordered, ordered[1:], strict=False))


async def test_skip_with_a_handler_slower_than_the_period_never_overlaps(jobwire, handler, db):
    calls = await _slow_schedule_timeline(jobwire, handler, "SKIP")
    assert len(calls) >= 3 and not _overlaps(calls)
    rows = await cron_rows(db, "slow-SKIP")
    # One fire per 2.2 s call, not one per second: the instants in between were skipped.
    assert len(rows) <= 4
    assert all(r["state"] in ("SUCCEEDED", "PROCESSING", "ENQUEUED") for r in rows)


async def test_queue_one_with_a_handler_slower_than_the_period_keeps_one_waiting(jobwire, handler, db):
    calls = await _slow_schedule_timeline(jobwire, handler, "QUEUE_ONE")
    assert len(calls) >= 3 and not _overlaps(calls)
    ordered = sorted(calls)
    # The held-back fire runs right after the previous one ends (no wait for a later instant).
    gaps = [b[0] - a[1] for a, b in zip(ordered, ordered[1:], strict=False)]
    assert all(gap < 0.9 for gap in gaps), gaps
    rows = await cron_rows(db, "slow-QUEUE_ONE")
    assert len(rows) <= 5
