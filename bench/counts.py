"""counts: GET /v1/queues and GET /metrics with a large finished history, beside the same live
rows with no history at all.

Two databases on the same server, each migrated by the app/ this process imports:
- history: `rows` SUCCEEDED executions (bench/history.py: created 6.5 to 0.5 days ago, inside
  the default 7-day retention, so the node's pruner has nothing to do) in queues history-1 …
  history-10, VACUUM ANALYZE;
- empty: no history.
Both get the same live rows (bench/history.py LIVE: 3,000 over queues live-1 … live-10). One
`jobwire serve` on each (its defaults, claiming from a queue that has no rows, so the live rows
stay as written). Then `requests` rounds, each one GET /v1/queues and one GET /metrics on both
nodes (the history node first in even rounds, the empty one in odd rounds), one request at a
time from one aiohttp session: client-side milliseconds from sending the request to the last
byte of the answer; p50 / p95 / max per endpoint and node, and history ÷ empty. Both nodes'
answers are compared (the same queues and counts: the history is not counted), and the
EXPLAIN (ANALYZE, BUFFERS) of the queues_depth statement on each database is kept."""

from __future__ import annotations

import asyncio
import statistics
import time
from collections.abc import Callable
from typing import Any

import aiohttp
import asyncpg
import orjson

from bench import history
from bench.pg import Server
from bench.processes import start_jobwire
from bench.stats import percentile
from bench.target import expect

SIDES = ("history", "empty")
ENDPOINTS = {"queues": "/v1/queues", "metrics": "/metrics"}
NO_QUEUE = {"JOBWIRE_QUEUES": "bench-counts-nothing"}  # the node claims from this queue only: none of the rows


def _summary(ms: list[float]) -> dict[str, float]:
    ordered = sorted(ms)
    return {"p50_ms": round(statistics.median(ordered), 2), "p95_ms": round(percentile(ordered, 95), 2),
            "max_ms": round(ordered[-1], 2), "requests": len(ordered)}


async def _explain(conn: asyncpg.Connection) -> str:
    try:
        from app.db.queues import Q

        rows = await conn.fetch("EXPLAIN (ANALYZE, BUFFERS) " + Q["queues_depth"].sql, None)
        return "\n".join(r[0] for r in rows)
    except Exception as exc:  # the statement moved or changed its parameters: the figures stand without it
        return f"(no plan: {exc})"


def _queues_of(document: dict) -> list[dict]:
    """The queues of a GET /v1/queues answer without the ages (they move between two requests)."""
    items = document.get("queues", document.get("items", document)) if isinstance(document, dict) else document
    return [{k: v for k, v in q.items() if "age" not in k} for q in items]


async def counts(server: Server, rows: int, requests: int, log: Callable[[str], None]) -> dict[str, Any]:
    from app.db.migrate import upgrade_sync

    dsns = {side: await server.create_database(f"counts_{side}") for side in SIDES}
    fills: dict[str, Any] = {}
    plans: dict[str, str] = {}
    for side, dsn in dsns.items():
        await asyncio.to_thread(upgrade_sync, dsn, None)
        conn = await asyncpg.connect(dsn)
        try:
            if side == "history":
                log(f"counts: {rows:,} SUCCEEDED rows of history")
                fills[side] = await history.fill_history(conn, rows, oldest_days=6.5, newest_days=0.5, log=log)
            fills.setdefault(side, {"rows": 0})["live_rows"] = await history.fill_live(conn)
            fills[side].update(await history.table_sizes(conn))
        finally:
            await conn.close()
    nodes = {}
    try:
        for side, dsn in dsns.items():
            nodes[side] = await start_jobwire(dsn, None, None, settings=NO_QUEUE)
        times: dict[str, dict[str, list[float]]] = {side: {e: [] for e in ENDPOINTS} for side in SIDES}
        answers: dict[str, Any] = {}
        async with aiohttp.ClientSession() as http:
            async def get(side: str, path: str) -> tuple[float, bytes]:
                started = time.perf_counter()
                async with http.get(nodes[side].url + path) as r:
                    data = await r.read()
                    if r.status != 200:
                        raise RuntimeError(f"GET {path} on the {side} node: {r.status} {data[:200]!r}")
                return (time.perf_counter() - started) * 1000, data

            for side in SIDES:  # warm up: connections, prepared statements, caches
                for path in ENDPOINTS.values():
                    for _ in range(10):
                        await get(side, path)
                async with http.get(nodes[side].url + "/v1/queues") as r:
                    answers[side] = _queues_of(await expect(r, 200))
            log(f"counts: {requests} rounds of GET /v1/queues and GET /metrics on both nodes, in turns")
            for i in range(requests):
                order = SIDES if i % 2 == 0 else SIDES[::-1]
                for endpoint, path in ENDPOINTS.items():
                    for side in order:
                        ms, _ = await get(side, path)
                        times[side][endpoint].append(ms)
        for side, dsn in dsns.items():
            conn = await asyncpg.connect(dsn)
            try:
                plans[side] = await _explain(conn)
            finally:
                await conn.close()
    finally:
        for node in nodes.values():
            node.stop()
        for dsn in dsns.values():
            await server.drop_database(dsn)
    out: dict[str, Any] = {"rows": rows, "requests": requests, "interleaved": True}
    for side in SIDES:
        out[side] = {"fill": fills[side], "plan": plans.get(side),
                     **{endpoint: _summary(times[side][endpoint]) for endpoint in ENDPOINTS}}
    out["ratio_history_to_empty"] = {
        endpoint: round(out["history"][endpoint]["p50_ms"] / out["empty"][endpoint]["p50_ms"], 2)
        for endpoint in ENDPOINTS}
    out["same_answer"] = answers.get("history") == answers.get("empty")
    out["queues_listed"] = len(answers.get("history") or [])
    out["answer_bytes"] = len(orjson.dumps(answers.get("history")))
    return out
