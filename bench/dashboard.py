"""dashboard: each page of the dashboard (/ui) with a long history, on a database and a node of
its own (issue 25: every page in ≤ 100 ms of server time with 10,000,000 rows of history).

The database, migrated by the app/ this process imports, holds:
- `rows` SUCCEEDED executions of history (bench/history.py: created over the last 7 days) in
  queues history-1 … history-10, without events;
- 100,000 more SUCCEEDED executions with metadata {"tenant": "tenant-<g mod 1,000>"} and a
  concurrency key, so the metadata and key filters each match 100 rows spread over the history;
- the live rows of bench/history.py (ENQUEUED due and later, PROCESSING, DEAD_LETTER: 3,000 over
  queues live-1 … live-10);
- 300,000 attempt-outcome events over the last 15 minutes (what the overview's chart and its
  recent failures read: a node draining 333 jobs a second), one in ten a failure;
then VACUUM ANALYZE. One `jobwire serve` (no API keys: the dashboard is open; claiming from a
queue with no rows, so the live rows stay as written). Every page of the navigation, the
executions list under each of its filters and on its second page, an execution's page (one of the
history, one dead-lettered) and the dead letters' confirmation (a dry run of its selection) are
each requested `requests` times, one at a time, after 3 warm-up requests (the first timed apart): client-side
milliseconds from the request to the answer's last byte on loopback (the server's time and a
little more), p50 / p95 / max per page, the first request's time apart (the overview's figures
and the handlers' activity are read once per 2 s per node: the first request of each page pays
the reads the next ones find cached: the whole window of outcomes, once per node), one more
request 2.1 s after the last (`refresh_ms`: the figures read again, the outcome ledger only its
last two minutes), and the execution rows the last answer showed (a filter
that matched nothing would be fast for nothing). The target is judged on each page's p50."""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import quote

import aiohttp
import asyncpg

from bench import history
from bench.pg import Server
from bench.processes import start_jobwire
from bench.stats import percentile

TARGET_MS = 100.0
NO_QUEUE = {"JOBWIRE_QUEUES": "bench-dashboard-nothing"}  # the node claims from this queue only: none of the rows
TAGGED = 100_000  # executions with metadata and a concurrency key
TENANTS = 1_000
EVENTS = 300_000  # attempt outcomes over the last 15 minutes

_TAGGED_SQL = f"""
INSERT INTO job_executions (job_id, job_type, handler, queue, state, payload, attempt, priority, scheduled_at,
                            started_at, completed_at, created_at, updated_at, metadata, concurrency_key,
                            idempotency_key)
SELECT 'tagged-' || g, 'DELAYED', '{history.HANDLER}', 'history-' || (1 + g % 10), 'SUCCEEDED',
       jsonb_build_object('i', g), 0, 0, t, t + interval '50 ms', t + interval '80 ms', t, t + interval '80 ms',
       jsonb_build_object('tenant', 'tenant-' || (g % {TENANTS}), 'i', g), 'key-' || (g % {TENANTS}),
       'idem-' || g
FROM (SELECT g, now() - make_interval(secs => 7 * 86400.0 * g / {TAGGED}) AS t
      FROM generate_series(1, {TAGGED}) AS g) AS s
"""

# Outcome events of the last 15 minutes, for executions of the live queues (the rows they name need
# not exist: the chart counts events, the failures list links to them).
_EVENTS_SQL = f"""
INSERT INTO job_events (execution_id, event, occurred_at, type, attempt, started_at, node, http_status, error)
SELECT e.id, jsonb_build_object('execution_id', e.id, 'queue', 'live-' || (1 + g % 10), 'handler',
                                '{history.HANDLER}', 'job_id', 'outcome-' || g, 'new_state', e.state),
       e.at, e.type, 0, e.at - interval '30 ms', 'bench-dashboard', e.status, e.error
FROM (SELECT g, jobwire_uuid7() AS id, now() - make_interval(secs => 900.0 * g / {EVENTS}) AS at,
             CASE WHEN g % 10 = 0 THEN 'execution.failed' ELSE 'execution.succeeded' END AS type,
             CASE WHEN g % 10 = 0 THEN 'ENQUEUED' ELSE 'SUCCEEDED' END AS state,
             CASE WHEN g % 10 = 0 THEN 503 ELSE 200 END AS status,
             CASE WHEN g % 10 = 0 THEN 'HTTP 503 Service Unavailable' END AS error
      FROM generate_series(1, {EVENTS}) AS g) AS e
"""


def _summary(ms: list[float]) -> dict[str, float]:
    ms = sorted(ms)
    return {"p50_ms": round(percentile(ms, 50), 2), "p95_ms": round(percentile(ms, 95), 2),
            "max_ms": round(max(ms), 2), "requests": len(ms)}


async def _fill(dsn: str, rows: int, log: Callable[[str], None]) -> dict[str, Any]:
    from app.db.migrate import upgrade_sync

    await asyncio.to_thread(upgrade_sync, dsn, None)
    conn = await asyncpg.connect(dsn)
    try:
        log(f"dashboard: {rows:,} SUCCEEDED rows of history")
        fill = await history.fill_history(conn, rows, oldest_days=7, newest_days=0, log=log)
        started = time.monotonic()
        await conn.execute(_TAGGED_SQL)
        fill["live_rows"] = await history.fill_live(conn)
        await conn.execute(_EVENTS_SQL)
        await conn.execute("VACUUM ANALYZE job_executions")
        await conn.execute("VACUUM ANALYZE job_events")
        fill["tagged_rows"], fill["outcome_events"] = TAGGED, EVENTS
        fill["extra_seconds"] = round(time.monotonic() - started, 1)
        fill.update(await history.table_sizes(conn))
        ids = await conn.fetchrow(
            "SELECT (SELECT id FROM job_executions WHERE queue = 'history-3' AND state = 'SUCCEEDED' "
            "        ORDER BY created_at DESC LIMIT 1 OFFSET 5000) AS old, "
            "       (SELECT id FROM job_executions WHERE state = 'DEAD_LETTER' LIMIT 1) AS dead")
        fill["ids"] = {"history": str(ids["old"]), "dead_letter": str(ids["dead"])}
    finally:
        await conn.close()
    return fill


def _pages(ids: dict[str, str], created_after: str) -> dict[str, str]:
    """The URLs timed, by name: the navigation's pages (app/ui/nav.py), the list under each filter,
    an execution's page of each kind, the dead letters' confirmation."""
    from app.ui.nav import NAV

    pages = {f"nav {item.label}": item.href for item in NAV}
    pages.update({
        "executions state=DEAD_LETTER": "/ui/executions?state=DEAD_LETTER",
        "executions queue": "/ui/executions?queue=history-3",
        "executions handler": f"/ui/executions?handler={history.HANDLER}",
        "executions job_id": "/ui/executions?job_id=tagged-777",
        "executions idempotency_key": "/ui/executions?idempotency_key=idem-777",
        "executions concurrency_key": "/ui/executions?concurrency_key=key-7",
        "executions metadata": "/ui/executions?metadata=" + quote("tenant:tenant-7"),
        "executions created_after": "/ui/executions?created_after=" + quote(created_after),
        "executions state+queue": "/ui/executions?state=SUCCEEDED&queue=history-3",
        "execution (history)": f"/ui/executions/{ids['history']}",
        "execution (dead letter)": f"/ui/executions/{ids['dead_letter']}",
        "dead letters confirm all": "/ui/dead-letters/confirm?action=retry&all=1",
        "API executions metadata": "/v1/executions?metadata=" + quote("tenant:tenant-7"),
    })
    return pages


_NEXT = re.compile(rb'href="(/ui/executions\?[^"]*cursor=[^"]+)"')


async def dashboard(server: Server, rows: int, requests: int, log: Callable[[str], None]) -> dict[str, Any]:
    from app.services.dashboard import CACHE_SECONDS  # the node's figures and outcome ledger, fresh this long
    dsn = await server.create_database("dashboard")
    node = None
    try:
        fill = await _fill(dsn, rows, log)
        node = await start_jobwire(dsn, None, None, settings=NO_QUEUE)
        conn = await asyncpg.connect(dsn)
        try:
            created_after = (await conn.fetchval("SELECT now() - interval '6 days'")).isoformat()
        finally:
            await conn.close()
        pages = _pages(fill["ids"], created_after)
        times: dict[str, list[float]] = {}
        statuses: dict[str, int] = {}
        shown: dict[str, int] = {}
        first: dict[str, float] = {}
        refresh: dict[str, float] = {}
        async with aiohttp.ClientSession() as http:
            async def get(path: str) -> tuple[float, int, bytes]:
                started = time.perf_counter()
                async with http.get(node.url + path, allow_redirects=False) as r:
                    data = await r.read()
                return (time.perf_counter() - started) * 1000, r.status, data

            _, _, listing = await get("/ui/executions")
            following = _NEXT.search(listing)
            if following:
                pages["executions second page"] = following.group(1).decode().replace("&amp;", "&")
            log(f"dashboard: {len(pages)} pages, {requests} requests each")
            for name, path in pages.items():
                first[name], _, _ = await get(path)  # the node's caches empty for this page
                for _ in range(2):
                    await get(path)
                times[name] = []
                for _ in range(requests):
                    ms, status, data = await get(path)
                    times[name].append(ms)
                    statuses[name] = status
                shown[name] = data.count(b"data-execution-id=")
                await asyncio.sleep(CACHE_SECONDS + 0.1)  # the node's figures stale: one request reads them again
                refresh[name], _, _ = await get(path)
    finally:
        if node is not None:
            node.stop()
        await server.drop_database(dsn)
    measured = {name: {"path": pages[name], "status": statuses[name], "execution_rows": shown[name],
                       "first_ms": round(first[name], 2), "refresh_ms": round(refresh[name], 2), **_summary(ms)}
                for name, ms in times.items()}
    out: dict[str, Any] = {"rows": rows, "fill": fill, "requests": requests, "target_p50_ms": TARGET_MS,
                           "pages": measured}
    failing = {n: p["status"] for n, p in out["pages"].items() if p["status"] != 200}
    out["not_200"] = failing
    slowest = max(out["pages"].items(), key=lambda kv: kv[1]["p50_ms"])
    out["slowest"] = {"page": slowest[0], "p50_ms": slowest[1]["p50_ms"]}
    out["met"] = not failing and all(p["p50_ms"] <= TARGET_MS for p in out["pages"].values())
    return out
