"""claim_history: the claim's cost with a long finished history in the table, against the same
backlog with no history.

In a database of its own, two schemas, each migrated by the app/ this process imports: both get
the same `backlog` ENQUEUED rows (bench/claim_cost.py's rows), and one of them `rows` SUCCEEDED
executions of history besides (bench/history.py: created over the last 7 days, the default
retention; no job_events rows: the claim only appends to job_events), inserted into the migrated
table (every index maintained as the service maintains it), then VACUUM ANALYZE. Then the claim is
timed exactly as bench/claim_cost.py times it: ExecutionRepository.claim(n=64), one call of
jobwire_claim, in a transaction rolled back, the two schemas taking turns claim by claim, with the
auto_explain plans of the statements inside jobwire_claim at each."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

from bench import history
from bench.claim_cost import HANDLER_SQL, INSERT_SQL, ClaimTables
from bench.stats import claim_summary


async def _fill(database_url: str, schema: str, backlog: int, rows: int, log: Callable[[str], None]) -> Any:
    from app.db.connection import DatabaseConfig, create_pool
    from app.db.migrate import upgrade_sync

    await asyncio.to_thread(upgrade_sync, database_url, schema)
    pool = await create_pool(DatabaseConfig(url=database_url, schema=schema, pool_size=1))
    async with pool.acquire() as conn:
        async with conn.transaction():
            await conn.execute(HANDLER_SQL)
            await conn.execute(INSERT_SQL.format(first="$1", last="$2"), 1, backlog)
        fill: dict[str, Any] = {"rows": 0}
        if rows:
            fill = await history.fill_history(conn, rows, oldest_days=7, newest_days=0, log=log)
        await conn.execute("VACUUM ANALYZE job_executions")
        fill.update(await history.table_sizes(conn))
    return pool, fill


class HistoryTables(ClaimTables):
    """ClaimTables keyed by the rows of history (0 and `rows`), each schema with the same backlog."""

    def __init__(self, database_url: str, sizes: tuple[int, ...], batch: int, backlog: int,
                 log: Callable[[str], None]) -> None:
        super().__init__(database_url, sizes, batch)
        self.backlog, self.log = backlog, log
        self.fills: dict[int, dict[str, Any]] = {}

    async def fill(self) -> None:
        for size in self.sizes:
            self.engines[size], self.fills[size] = await _fill(self.database_url, f"history_{size}", self.backlog,
                                                               size, self.log)


async def claim_history(database_url: str, rows: int, backlog: int, batch: int, reps: int,
                        log: Callable[[str], None]) -> dict[str, Any]:
    sizes = (0, rows)
    tables = HistoryTables(database_url, sizes, batch, backlog, log)
    started = time.monotonic()
    try:
        log(f"claim_history: {backlog:,} ENQUEUED rows, with no history and with {rows:,} SUCCEEDED rows")
        await tables.fill()
        filled = time.monotonic() - started
        log(f"claim_history: filled in {filled:.0f} s; {reps} claims of {batch} at each, in turns")
        await tables.time(10)  # warm-up: caches and prepared statements
        times = await tables.time(reps)
        plans = await tables.plans()
    finally:
        await tables.close()
    out = claim_summary(sizes, batch, reps, times, plans)
    out["backlog"] = backlog
    out["history_rows"] = rows
    out["fill_seconds"] = round(filled, 1)
    for size in sizes:
        out["sizes"][str(size)]["fill"] = tables.fills.get(size)
    return out
