"""workflows: what dependencies cost (issue 24), on one `jobwire serve` of its own.

- fan-out/fan-in: a workflow 1 → 1,000 → 1 (a root, 1,000 children of it, a final job depending on
  all 1,000) beside 1,002 independent jobs, the same no-op handler on the same node. Each side:
  its queue paused, its 1,002 jobs enqueued in two calls (independent: POST /v1/jobs/batch of
  1,000 and of 2; the workflow: POST /v1/workflows with the root and 999 children, then POST
  /v1/workflows/{id}/jobs with the 1,000th child and the final job, a call holding at most 1,000
  jobs), the queue resumed; timed from the first enqueue call to its last job's completion (the
  largest `completed_at` of its jobs; for the workflow its own `completed_at`, once a 10 ms poller
  on the database sees it finished, and GET /v1/workflows/{id} must answer SUCCEEDED with all
  1,002 SUCCEEDED). The queue is paused during the enqueue because a workflow that finished
  before its second call would refuse it (409): both sides the same way. Per run `repeats` pairs,
  the order alternating pair by pair; a run's figure per side is the median of its repeats, the
  step's the median of the runs (target: workflow ≥ 0.8× independent). Beside each measurement:
  its phases from its rows (when the root, the children, the final job started and completed)
  and the node's active backends by wait event, sampled at each poll.
- release: a root with 10,000 WAITING children in a paused queue, built through the API (POST
  /v1/workflows with the root and 999 children, then POST …/jobs of 1,000 each). A workflow holds
  at most 10,000 jobs, the root included, so for the last child the harness lowers the
  workflow's `jobs` counter (the cap's count, which nothing else reads) by one in SQL and raises
  it again after the call. After VACUUM ANALYZE, on a connection of its own, the statement
  `UPDATE job_executions SET state = 'SUCCEEDED', completed_at = now() WHERE id = <root>` runs in
  a DO block between two clock_timestamp() readings (its triggers included: the children are
  released by the trigger in that statement), committed at once; the block's time is the figure
  (target: ≤ 1,000 ms), the client's time of the whole transaction (round trip and commit)
  beside it. Then every child must be ENQUEUED. Once per run.
- where the time goes (once, on one more build, rolled back): EXPLAIN (ANALYZE, BUFFERS) of the
  same update, the nested statements' durations from auto_explain grouped by statement (a
  superuser's LOAD; their instrumentation slows them), pg_stat_xact_user_functions (calls of the
  trigger function) and pg_stat_xact_user_tables (row versions written per table).
"""

from __future__ import annotations

import asyncio
import re
import statistics
import time
from collections.abc import Callable
from typing import Any
from uuid import UUID

import aiohttp
import asyncpg

from bench import jobwire_db
from bench.pg import Server
from bench.processes import Child, start_jobwire
from bench.target import JSON, SYNC_HANDLER, Target, body, expect, handler_call, register_handlers, set_paused

FAN = 1_000  # children of the 1 → 1,000 → 1 workflow
PER_CALL = 1_000  # jobs per POST /v1/workflows or POST …/jobs (MAX_JOBS_PER_CALL), and per batch enqueue
WORKFLOW_CAP = 10_000  # jobs per workflow (MAX_JOBS), the root included
TERMINAL = ("SUCCEEDED", "DEAD_LETTER", "CANCELLED")
POLL = 0.01
TIMEOUT = 300.0


def _job(queue: str, i: int, **more: Any) -> dict[str, Any]:
    return {"handler": SYNC_HANDLER, "queue": queue, "payload": {"i": i}, **more}


def fan_calls(queue: str, fan: int = FAN) -> list[list[dict[str, Any]]]:
    """The jobs of the workflow 1 → fan → 1, split into calls of at most PER_CALL: the first
    (POST /v1/workflows) starts with the root, the last ends with the final job."""
    jobs = [_job(queue, 0, ref="root")]
    jobs += [_job(queue, i, ref=f"c{i}", depends_on=["root"]) for i in range(1, fan + 1)]
    jobs.append(_job(queue, fan + 1, ref="final", depends_on=[f"c{i}" for i in range(1, fan + 1)]))
    return [jobs[i:i + PER_CALL] for i in range(0, len(jobs), PER_CALL)]


def independent_calls(queue: str, n: int) -> list[list[dict[str, Any]]]:
    """n independent jobs in calls of POST /v1/jobs/batch: as many calls, as full, as fan_calls'."""
    return [[_job(queue, i) for i in range(s, min(s + PER_CALL, n))] for s in range(0, n, PER_CALL)]


def release_calls(queue: str, children: int) -> list[list[dict[str, Any]]]:
    """A root and `children` children of it, in calls of at most PER_CALL, the root first."""
    jobs = [_job(queue, 0, ref="root")]
    jobs += [_job(queue, i, ref=f"c{i}", depends_on=["root"]) for i in range(1, children + 1)]
    return [jobs[i:i + PER_CALL] for i in range(0, len(jobs), PER_CALL)]


def _median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


async def _post(http: aiohttp.ClientSession, url: str, data: bytes, status: int = 201) -> dict[str, Any]:
    async with http.post(url, data=data, headers=JSON) as r:
        return await expect(r, status)


async def _clear(conn: asyncpg.Connection, queue: str, workflow_ids: list[UUID]) -> None:
    """The rows of a measurement (its jobs, their edges and events, its workflows and their events)."""
    ids = list(workflow_ids)
    await conn.execute("DELETE FROM job_events WHERE execution_id IN (SELECT id FROM job_executions WHERE queue = $1)"
                       " OR execution_id = ANY($2::uuid[])", queue, ids)
    await conn.execute("DELETE FROM job_executions WHERE queue = $1", queue)  # edges: the deletions trigger
    await conn.execute("DELETE FROM job_workflows WHERE id = ANY($1::uuid[])", ids)
    await conn.execute("DELETE FROM job_queues WHERE name = $1", queue)
    for table in ("job_executions", "job_events", "job_dependencies", "job_workflows"):
        await conn.execute(f"VACUUM ANALYZE {table}")


async def _finished_at(conn: asyncpg.Connection, queue: str) -> tuple[int, float | None]:
    row = await conn.fetchrow("SELECT count(*) FILTER (WHERE state = 'SUCCEEDED') AS n,"
                              " extract(epoch FROM max(completed_at)) AS last FROM job_executions WHERE queue = $1",
                              queue)
    return row["n"], (float(row["last"]) if row["last"] is not None else None)


async def _side(http: aiohttp.ClientSession, conn: asyncpg.Connection, t: Target, side: str,
                queue: str) -> dict[str, Any]:
    """One measurement of `side` ("independent" or "workflow") in `queue` (module docstring)."""
    calls = fan_calls(queue) if side == "workflow" else independent_calls(queue, FAN + 2)
    n = sum(len(c) for c in calls)
    bodies = [body({"name": queue, "jobs": c}) if side == "workflow" and i == 0 else body({"jobs": c})
              for i, c in enumerate(calls)]
    workflow_id: UUID | None = None
    await set_paused(http, t, queue, True)
    await handler_call(http, t, "POST", "/reset")
    try:
        started = time.time()
        for i, data in enumerate(bodies):
            if side == "independent":
                await _post(http, f"{t.api}/v1/jobs/batch", data)
            elif i == 0:
                workflow_id = UUID((await _post(http, f"{t.api}/v1/workflows", data))["id"])
            else:
                await _post(http, f"{t.api}/v1/workflows/{workflow_id}/jobs", data)
        enqueued = time.time()
        await set_paused(http, t, queue, False)
        resumed = time.time()
        deadline = time.monotonic() + TIMEOUT
        waits: dict[str, int] = {}
        polls = 0
        while True:
            polls += 1
            for r in await conn.fetch(WAITS_SQL):
                waits[r["wait"]] = waits.get(r["wait"], 0) + r["n"]
            if workflow_id is not None:
                done = await conn.fetchval("SELECT state <> 'RUNNING' FROM job_workflows WHERE id = $1", workflow_id)
            else:
                done = not await conn.fetchval(
                    "SELECT EXISTS (SELECT 1 FROM job_executions WHERE queue = $1 AND state <> ALL($2::text[]))",
                    queue, list(TERMINAL))
            if done:
                seen = time.time()
                break
            if time.monotonic() > deadline:
                raise RuntimeError(f"workflows: the {side} side of {queue} not done after {TIMEOUT} s")
            await asyncio.sleep(POLL)
        stats = await handler_call(http, t, "GET", "/stats")
        succeeded, last = await _finished_at(conn, queue)
        out: dict[str, Any] = {"phases_s": await _phases(conn, queue, started)}
        if workflow_id is not None:
            async with http.get(f"{t.api}/v1/workflows/{workflow_id}") as r:
                view = await expect(r, 200)
            if view["state"] != "SUCCEEDED" or view["counts"] != {"SUCCEEDED": n}:
                raise RuntimeError(f"workflows: GET /v1/workflows/{workflow_id} → {view['state']} {view['counts']}")
            last = float(await conn.fetchval("SELECT extract(epoch FROM completed_at) FROM job_workflows WHERE id = $1",
                                             workflow_id))
            out["workflow_state"] = view["state"]
    finally:
        await _clear(conn, queue, [workflow_id] if workflow_id else [])
    seconds = (last or seen) - started
    return {"side": side, "jobs": n, "seconds": round(seconds, 3), "jobs_per_s": round(n / seconds, 1),
            "enqueue_s": round(enqueued - started, 3), "resumed_s": round(resumed - started, 3),
            "seen_after_s": round(seen - started, 3),
            "succeeded": succeeded, "lost": n - succeeded, "handler_distinct": stats["distinct"],
            "dispatched_twice": stats["dispatched_twice"], **out,
            "active_backends_by_wait": {"polls": polls, **dict(sorted(waits.items(), key=lambda kv: -kv[1]))}}


# The node's backends at work, by what they wait for ("CPU" when nothing), sampled at each poll.
WAITS_SQL = """
SELECT COALESCE(wait_event_type || ':' || wait_event, 'CPU') AS wait, count(*) AS n
FROM pg_stat_activity
WHERE datname = current_database() AND pid <> pg_backend_pid() AND state = 'active'
GROUP BY 1
"""
# When each part of a side happened, from its rows (seconds after its first enqueue call): for
# the workflow, the root, the children and the final job apart.
PHASES_SQL = """
SELECT CASE workflow_ref WHEN 'root' THEN 'root' WHEN 'final' THEN 'final'
            ELSE CASE WHEN workflow_ref IS NULL THEN 'jobs' ELSE 'children' END END AS part,
       extract(epoch FROM min(started_at)) - $2 AS first_started,
       extract(epoch FROM max(started_at)) - $2 AS last_started,
       extract(epoch FROM min(completed_at)) - $2 AS first_completed,
       extract(epoch FROM max(completed_at)) - $2 AS last_completed
FROM job_executions WHERE queue = $1 GROUP BY 1
"""


async def _phases(conn: asyncpg.Connection, queue: str, started: float) -> dict[str, dict[str, float]]:
    return {r["part"]: {k: round(float(r[k]), 3) for k in ("first_started", "last_started", "first_completed",
                                                            "last_completed") if r[k] is not None}
            for r in await conn.fetch(PHASES_SQL, queue, started)}


async def _build_release(http: aiohttp.ClientSession, conn: asyncpg.Connection, t: Target, queue: str,
                         children: int) -> tuple[UUID, UUID, float]:
    """A root with `children` WAITING children in the paused `queue` (module docstring); (workflow id,
    root id, seconds the API calls took)."""
    await set_paused(http, t, queue, True)
    calls = release_calls(queue, children)
    workflow_id: UUID | None = None
    root: UUID | None = None
    total = 0
    started = time.monotonic()
    for i, jobs in enumerate(calls):
        lowered = max(0, total + len(jobs) - WORKFLOW_CAP)
        if lowered:  # past the API's cap: the counter the cap reads lowered for this call
            await conn.execute("UPDATE job_workflows SET jobs = jobs - $2 WHERE id = $1", workflow_id, lowered)
        if i == 0:
            made = await _post(http, f"{t.api}/v1/workflows", body({"name": queue, "jobs": jobs}))
            workflow_id = UUID(made["id"])
            root = next(UUID(item["execution_id"]) for item in made["items"] if item["ref"] == "root")
        else:
            await _post(http, f"{t.api}/v1/workflows/{workflow_id}/jobs", body({"jobs": jobs}))
        if lowered:
            await conn.execute("UPDATE job_workflows SET jobs = jobs + $2 WHERE id = $1", workflow_id, lowered)
        total += len(jobs)
    build_s = time.monotonic() - started
    assert workflow_id is not None and root is not None
    waiting = await conn.fetchval("SELECT count(*) FROM job_executions WHERE workflow_id = $1 AND state = 'WAITING'",
                                  workflow_id)
    jobs_counted = await conn.fetchval("SELECT jobs FROM job_workflows WHERE id = $1", workflow_id)
    if waiting != children or jobs_counted != children + 1:
        raise RuntimeError(f"workflows: built {waiting} WAITING children ({jobs_counted} jobs), not {children}")
    for table in ("job_executions", "job_events", "job_dependencies", "job_workflows"):
        await conn.execute(f"VACUUM ANALYZE {table}")
    return workflow_id, root, build_s


RELEASE_SQL = """
DO $release$
DECLARE
    t0 timestamptz := clock_timestamp();
BEGIN
    UPDATE job_executions SET state = 'SUCCEEDED', completed_at = now() WHERE id = '{root}';
    RAISE NOTICE 'bench-release-ms %', extract(epoch FROM clock_timestamp() - t0) * 1000;
END
$release$
"""
UPDATE_SQL = "UPDATE job_executions SET state = 'SUCCEEDED', completed_at = now() WHERE id = $1"


async def _release(http: aiohttp.ClientSession, t: Target, children: int, run: int) -> dict[str, Any]:
    """One timed release of `children` children (module docstring)."""
    queue = f"bench-wf-release-{run}"
    conn = await jobwire_db.connect(t.dsn, t.schema)
    workflow_id: UUID | None = None
    try:
        workflow_id, root, build_s = await _build_release(http, conn, t, queue, children)
        timed = await jobwire_db.connect(t.dsn, t.schema)  # a fresh backend: no plan cached for the trigger
        notices: list[str] = []
        timed.add_log_listener(lambda _c, m: notices.append(m.message))
        try:
            started = time.perf_counter()
            await timed.execute(RELEASE_SQL.format(root=root))  # one statement, autocommit: the DO, then COMMIT
            transaction_ms = (time.perf_counter() - started) * 1000
        finally:
            await timed.close()
        db_ms = next(float(m.split()[-1]) for m in notices if m.startswith("bench-release-ms"))
        states = {r["state"]: r["n"] for r in await conn.fetch(
            "SELECT state, count(*) AS n FROM job_executions WHERE workflow_id = $1 AND id <> $2 GROUP BY state",
            workflow_id, root)}
        counts = await conn.fetchval("SELECT counts FROM job_workflows WHERE id = $1", workflow_id)
    finally:
        await _clear(conn, queue, [workflow_id] if workflow_id else [])
        await conn.close()
    if states != {"ENQUEUED": children}:
        raise RuntimeError(f"workflows: after the root's update its children are {states}, not {children} ENQUEUED")
    return {"children": children, "db_ms": round(db_ms, 1), "transaction_ms": round(transaction_ms, 1),
            "build_s": round(build_s, 2), "children_enqueued": states.get("ENQUEUED", 0), "workflow_counts": counts}


AUTO_EXPLAIN = ("LOAD 'auto_explain'", "SET LOCAL auto_explain.log_min_duration = 0",
                "SET LOCAL auto_explain.log_nested_statements = on", "SET LOCAL auto_explain.log_analyze = on",
                "SET LOCAL auto_explain.log_buffers = on", "SET LOCAL auto_explain.log_timing = off",
                "SET LOCAL auto_explain.log_level = 'notice'")
DURATION = re.compile(r"duration: ([0-9.]+) ms")


def group_nested(notices: list[str], top: int = 8) -> list[dict[str, Any]]:
    """auto_explain's notices grouped by statement text: count, total and largest duration, and the
    plan of the largest, the groups with the largest total first."""
    groups: dict[str, dict[str, Any]] = {}
    for message in notices:
        found = DURATION.search(message)
        if not found:
            continue
        ms = float(found.group(1))
        query = message.split("Query Text:", 1)[1].strip() if "Query Text:" in message else "?"
        key = query.split("\n", 1)[0].strip()
        g = groups.setdefault(key, {"statement": query[:400], "calls": 0, "total_ms": 0.0, "max_ms": 0.0})
        g["calls"] += 1
        g["total_ms"] += ms
        if ms >= g["max_ms"]:
            g["max_ms"], g["plan_of_largest"] = ms, message
    ordered = sorted(groups.values(), key=lambda g: -g["total_ms"])[:top]
    for g in ordered:
        g["total_ms"], g["max_ms"] = round(g["total_ms"], 1), round(g["max_ms"], 1)
    return ordered


async def _where_the_time_goes(http: aiohttp.ClientSession, t: Target, children: int) -> dict[str, Any]:
    """The release explained, once, rolled back (module docstring)."""
    queue = "bench-wf-release-explain"
    conn = await jobwire_db.connect(t.dsn, t.schema)
    workflow_id: UUID | None = None
    out: dict[str, Any] = {"children": children}
    try:
        workflow_id, root, _ = await _build_release(http, conn, t, queue, children)
        probe = await jobwire_db.connect(t.dsn, t.schema)
        notices: list[str] = []
        probe.add_log_listener(lambda _c, m: notices.append(m.message))
        try:
            tx = probe.transaction()
            await tx.start()
            try:
                try:
                    async with probe.transaction():  # a savepoint: the setting may be refused to a plain role
                        await probe.execute("SET LOCAL track_functions = 'pl'")
                except asyncpg.PostgresError as exc:
                    out["functions"] = f"track_functions unavailable: {exc}"
                plan = await probe.fetch("EXPLAIN (ANALYZE, BUFFERS) " + UPDATE_SQL, root)
                out["explain"] = "\n".join(r[0] for r in plan)
                out.setdefault("functions", [dict(r) for r in await probe.fetch(
                    "SELECT funcname, calls, round(total_time::numeric, 1) AS total_ms,"
                    " round(self_time::numeric, 1) AS self_ms FROM pg_stat_xact_user_functions"
                    " ORDER BY total_time DESC")])
                out["tables"] = [dict(r) for r in await probe.fetch(
                    "SELECT relname, n_tup_ins, n_tup_upd, n_tup_hot_upd FROM pg_stat_xact_user_tables"
                    " WHERE n_tup_ins + n_tup_upd > 0 ORDER BY relname")]
            finally:
                await tx.rollback()
            await conn.execute("VACUUM job_executions")  # the rolled-back versions, before the second look
            await conn.execute("VACUUM job_workflows")
            await conn.execute("VACUUM job_events")
            notices.clear()
            tx = probe.transaction()
            await tx.start()
            try:
                for setting in AUTO_EXPLAIN:
                    await probe.execute(setting)
                started = time.perf_counter()
                await probe.execute(UPDATE_SQL, root)
                out["auto_explain_statement_ms"] = round((time.perf_counter() - started) * 1000, 1)
                out["nested"] = group_nested(notices)
                out["nested_notices"] = len(notices)
            except asyncpg.PostgresError as exc:  # no auto_explain here (LOAD needs a superuser)
                out["nested"] = f"auto_explain unavailable: {exc}"
            finally:
                await tx.rollback()
        finally:
            await probe.close()
    finally:
        await _clear(conn, queue, [workflow_id] if workflow_id else [])
        await conn.close()
    return out


async def workflows(server: Server, runs: int, concurrency: int | None, handler: Child, log: Callable[[str], None],
                    repeats: int = 5, children: int = 10_000, explain: bool = True) -> dict[str, Any]:
    dsn = await server.create_database("workflows")
    node = await start_jobwire(dsn, None, concurrency)
    t = Target(api=node.url, handler=handler.url, dsn=dsn, schema=None, jobwire_pid=node.pid, handler_pid=handler.pid)
    by_side: dict[str, list[dict[str, Any]]] = {"independent": [], "workflow": []}
    releases: list[dict[str, Any]] = []
    diagnosis: dict[str, Any] | None = None
    try:
        conn = await jobwire_db.connect(t.dsn, t.schema)
        try:
            async with aiohttp.ClientSession() as http:
                await register_handlers(http, t)
                for run in range(1, runs + 1):
                    reps: dict[str, list[dict[str, Any]]] = {"independent": [], "workflow": []}
                    for rep in range(repeats):
                        first = ("independent", "workflow") if (run + rep) % 2 else ("workflow", "independent")
                        for side in first:
                            reps[side].append(await _side(http, conn, t, side, f"bench-wf-{side}-{run}-{rep}"))
                    for side, rs in reps.items():
                        by_side[side].append({"run": run, "jobs_per_s": _median([r["jobs_per_s"] for r in rs]),
                                              "repeats": rs})
                    log(f"workflows run {run}: workflow {by_side['workflow'][-1]['jobs_per_s']} / independent "
                        f"{by_side['independent'][-1]['jobs_per_s']} jobs/s (medians of {repeats})")
                    releases.append(res := await _release(http, t, children, run))
                    log(f"workflows run {run}: {children:,} children released in {res['db_ms']} ms of database time "
                        f"({res['transaction_ms']} ms the transaction at the client; built in {res['build_s']} s)")
                if explain:
                    diagnosis = await _where_the_time_goes(http, t, children)
        finally:
            await conn.close()
    finally:
        node.stop()
        await server.drop_database(dsn)
    out = summarise(by_side, releases, children, repeats)
    out["release_explained"] = diagnosis
    log(f"workflows: workflow {out['workflow']['jobs_per_s']} / independent {out['independent']['jobs_per_s']} "
        f"jobs/s (× {out['ratio_workflow_to_independent']}); {children:,} children released in "
        f"{out['release']['db_ms']} ms of database time (median of {len(releases)})")
    return out


def summarise(by_side: dict[str, list[dict[str, Any]]], releases: list[dict[str, Any]], children: int,
              repeats: int) -> dict[str, Any]:
    independent = _median([r["jobs_per_s"] for r in by_side["independent"]])
    workflow = _median([r["jobs_per_s"] for r in by_side["workflow"]])
    every = [x for side in by_side.values() for r in side for x in r["repeats"]]
    pairs = [round(w["jobs_per_s"] / i["jobs_per_s"], 3)
             for wr, ir in zip(by_side["workflow"], by_side["independent"], strict=True)
             for w, i in zip(wr["repeats"], ir["repeats"], strict=True)]
    db_ms = _median([r["db_ms"] for r in releases])
    return {
        "shape": f"1 → {FAN:,} → 1 ({FAN + 2:,} jobs) beside {FAN + 2:,} independent jobs",
        "repeats_per_run": repeats,
        "independent": {"jobs_per_s": independent, "runs": by_side["independent"]},
        "workflow": {"jobs_per_s": workflow, "runs": by_side["workflow"]},
        "ratio_workflow_to_independent": round(workflow / independent, 3) if workflow and independent else None,
        "pair_ratios": pairs,
        "lost_total": sum(r["lost"] for r in every),
        "dispatched_twice_total": sum(r["dispatched_twice"] for r in every),
        "release": {"children": children, "db_ms": db_ms,
                    "transaction_ms": _median([r["transaction_ms"] for r in releases]), "runs": releases},
        f"release_{children}_children_db_ms": db_ms,
    }
