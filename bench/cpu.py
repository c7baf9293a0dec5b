"""Where the CPU went during a measurement: CPU seconds per wall second of the Jobwire process,
the handler process and all PostgreSQL processes, and of the whole machine (2.0 = both of
2 cores busy). A PostgreSQL backend that exits inside the window loses its share, so the
figure for PostgreSQL is a lower bound (Jobwire's pool keeps its connections)."""

from __future__ import annotations

import time

import psutil


def _cpu(process: psutil.Process) -> float:
    try:
        t = process.cpu_times()
        return t.user + t.system
    except psutil.Error:
        return 0.0


def _postgres() -> dict[int, psutil.Process]:
    found = {}
    for p in psutil.process_iter(["name"]):
        if "postgres" in (p.info["name"] or ""):
            found[p.pid] = p
    return found


def _machine_busy() -> float:
    t = psutil.cpu_times()
    return t.user + t.system + t.nice + getattr(t, "irq", 0.0) + getattr(t, "softirq", 0.0)


class CpuShare:
    def __init__(self, **pids: int) -> None:
        self.processes = {label: psutil.Process(pid) for label, pid in pids.items()}
        self.shares: dict[str, float] = {}

    def __enter__(self) -> CpuShare:
        self._t0 = time.perf_counter()
        self._machine0 = _machine_busy()
        self._own0 = {label: _cpu(p) for label, p in self.processes.items()}
        self._pg = _postgres()
        self._pg0 = {pid: _cpu(p) for pid, p in self._pg.items()}
        return self

    def __exit__(self, *exc: object) -> None:
        wall = time.perf_counter() - self._t0
        shares = {label: (_cpu(p) - self._own0[label]) / wall for label, p in self.processes.items()}
        pg_now = _postgres()
        pg = sum(_cpu(p) - self._pg0.get(pid, 0.0) for pid, p in pg_now.items())
        shares["postgres"] = pg / wall
        shares["machine"] = (_machine_busy() - self._machine0) / wall
        self.shares = {k: round(v, 2) for k, v in shares.items()}
