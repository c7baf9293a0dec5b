"""Finished history and live rows for the scale steps (counts, drain_pruning, claim_history),
written straight into a migrated job_executions (and job_events) with INSERT … SELECT
generate_series, so every index is maintained as the service maintains it, then VACUUM ANALYZE.

History rows look like the rows a drain leaves: SUCCEEDED, attempt 0, a time-ordered id (UUID
version 7 of their created_at, as jobwire_uuid7() makes it) and job_id = that id (the API's
default), created_at spread evenly over a span of days (oldest first, so ids, created_at and
completed_at all grow together), started 50 ms and completed 80 ms after. With events, three
job_events rows per execution as the service writes them (ENQUEUED, PROCESSING, SUCCEEDED with
type execution.succeeded), each with the same curated JSON document (about 600 bytes).

Live rows (counts): per queue, ENQUEUED due and scheduled later, PROCESSING accepted by a
handler (202: locked_by NULL, deadline a day away) and DEAD_LETTER; the nodes of the counts step
claim from no queue, so they stay as written."""

from __future__ import annotations

import time
from collections.abc import Callable

import asyncpg

HANDLER = "bench-noop-sync"

# $1, $2: the first and last g; $3: the rows of the whole history; $4, $5: the age in seconds
# of the oldest and the newest row; $6: the number of queues (history-1 … history-N).
_ROWS = """
SELECT CAST(lpad(to_hex(CAST(floor(extract(epoch FROM s.ts) * 1000) AS bigint)), 12, '0') || '7'
            || substr(s.h, 1, 3) || substr('89ab', 1 + CAST(s.g % 4 AS int), 1) || substr(s.h, 4, 15) AS uuid) AS id,
       s.g, s.ts, 'history-' || (1 + s.g % $6) AS queue
FROM (SELECT g, md5(CAST(g AS text)) AS h,
             now() - make_interval(secs => $4) + (g - 1) * make_interval(secs => ($4 - $5) / $3) AS ts
      FROM generate_series(CAST($1 AS bigint), CAST($2 AS bigint)) AS g) AS s
"""

_EXECUTIONS = f"""
INSERT INTO job_executions (id, job_id, job_type, handler, queue, state, payload, attempt, priority,
                            deadline_at, scheduled_at, started_at, completed_at, claimed_by, created_at, updated_at)
SELECT r.id, CAST(r.id AS text), 'DELAYED', '{HANDLER}', r.queue, 'SUCCEEDED', jsonb_build_object('i', r.g), 0, 0,
       r.ts + interval '120.05 s', r.ts, r.ts + interval '50 ms', r.ts + interval '80 ms', 'bench-history', r.ts,
       r.ts + interval '80 ms'
FROM ({_ROWS}) AS r
"""


def _event(new_state: str, started: str, completed: str) -> str:
    return (f"jsonb_build_object('queue', x.queue, 'job_id', CAST(x.id AS text), 'attempt', 0, 'handler', "
            f"'{HANDLER}', 'job_type', 'DELAYED', 'metadata', NULL, 'new_state', '{new_state}', 'created_at', "
            f"x.created_at, 'error_type', NULL, 'started_at', {started}, 'completed_at', {completed}, "
            f"'execution_id', x.id, 'max_attempts', 5, 'scheduled_at', x.scheduled_at)")


_EXECUTIONS_WITH_EVENTS = f"""
WITH x AS ({_EXECUTIONS} RETURNING id, queue, created_at, scheduled_at, started_at, completed_at)
INSERT INTO job_events (execution_id, event, occurred_at, type, attempt, started_at, node, http_status)
SELECT x.id, {_event('ENQUEUED', 'NULL', 'NULL')}, x.created_at, CAST(NULL AS text), CAST(NULL AS int),
       CAST(NULL AS timestamptz), CAST(NULL AS text), CAST(NULL AS int) FROM x
UNION ALL
SELECT x.id, {_event('PROCESSING', 'x.started_at', 'NULL')}, x.started_at, NULL, NULL, NULL, NULL, NULL FROM x
UNION ALL
SELECT x.id, {_event('SUCCEEDED', 'x.started_at', 'x.completed_at')}, x.completed_at, 'execution.succeeded', 0,
       x.started_at, 'bench-history', 200 FROM x
"""

DAY = 86_400.0
CHUNK = 500_000  # rows per INSERT statement (each its own transaction), so progress can be logged


async def fill_history(conn: asyncpg.Connection, rows: int, *, oldest_days: float, newest_days: float,
                       queues: int = 10, events: bool = False,
                       log: Callable[[str], None] | None = None) -> dict[str, float]:
    """`rows` SUCCEEDED executions (and, with `events`, three events each) created between
    `oldest_days` and `newest_days` ago, in chunks; then VACUUM ANALYZE. Returns the seconds it
    took and the tables' sizes."""
    started = time.monotonic()
    sql = _EXECUTIONS_WITH_EVENTS if events else _EXECUTIONS
    for first in range(1, rows + 1, CHUNK):
        last = min(first + CHUNK - 1, rows)
        await conn.execute(sql, first, last, rows, oldest_days * DAY, newest_days * DAY, queues)
        if log is not None and rows > CHUNK:
            log(f"  history: {last:,} of {rows:,} rows ({time.monotonic() - started:.0f} s)")
    inserted = time.monotonic() - started
    await conn.execute("VACUUM ANALYZE job_executions")
    if events:
        await conn.execute("VACUUM ANALYZE job_events")
    return {"rows": rows, "events": 3 * rows if events else 0, "insert_seconds": round(inserted, 1),
            "seconds": round(time.monotonic() - started, 1), **await table_sizes(conn)}


async def table_sizes(conn: asyncpg.Connection) -> dict[str, float]:
    """MB of job_executions and job_events, each with its indexes."""
    row = await conn.fetchrow("SELECT pg_total_relation_size('job_executions') AS e, "
                              "pg_total_relation_size('job_events') AS v")
    return {"job_executions_mb": round(row["e"] / 2**20, 1), "job_events_mb": round(row["v"] / 2**20, 1)}


LIVE = {"due": 200, "scheduled": 50, "processing": 30, "dead_letter": 20}  # per queue


async def fill_live(conn: asyncpg.Connection, queues: int = 10) -> int:
    """Per queue live-1 … live-N: the LIVE counts of ENQUEUED due, ENQUEUED scheduled an hour
    ahead, PROCESSING held by a handler (202, deadline a day away) and DEAD_LETTER rows. Returns
    how many rows that is."""
    parts = [
        ("ENQUEUED", LIVE["due"], "now() - interval '1 minute'", "NULL", "NULL", "NULL"),
        ("ENQUEUED", LIVE["scheduled"], "now() + interval '1 hour'", "NULL", "NULL", "NULL"),
        ("PROCESSING", LIVE["processing"], "now() - interval '1 minute'", "now() - interval '30 s'", "NULL",
         "now() + interval '1 day'"),
        ("DEAD_LETTER", LIVE["dead_letter"], "now() - interval '1 hour'", "now() - interval '59 minutes'",
         "now() - interval '59 minutes'", "NULL"),
    ]
    total = 0
    for state, per_queue, scheduled, started, completed, deadline in parts:
        await conn.execute(f"""
            INSERT INTO job_executions (job_id, job_type, handler, queue, state, payload, scheduled_at, started_at,
                                        completed_at, deadline_at)
            SELECT 'live-' || q || '-' || '{state.lower()}-' || g, 'DELAYED', '{HANDLER}', 'live-' || q, '{state}',
                   jsonb_build_object('i', g), {scheduled}, {started}, {completed}, {deadline}
            FROM generate_series(1, $1) AS q, generate_series(1, $2) AS g""", queues, per_queue)
        total += queues * per_queue
    await conn.execute("VACUUM ANALYZE job_executions")
    return total


async def count_history(conn: asyncpg.Connection, older_than_days: float) -> int:
    """SUCCEEDED rows created more than `older_than_days` ago (the history, not a drain's rows):
    a range of ix_job_executions_state_created."""
    return await conn.fetchval("SELECT count(*) FROM job_executions WHERE state = 'SUCCEEDED' "
                               "AND created_at < now() - make_interval(secs => $1)", older_than_days * DAY)
