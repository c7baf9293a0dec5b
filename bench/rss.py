"""Peak resident memory of the Jobwire process (and its children other than PostgreSQL),
sampled every 20 ms on a thread while a measurement runs."""

from __future__ import annotations

import threading

import psutil


def _rss(root: psutil.Process) -> int:
    total = root.memory_info().rss
    for child in root.children(recursive=True):
        try:
            if "postgres" not in child.name():
                total += child.memory_info().rss
        except psutil.Error:
            pass
    return total


class PeakRss:
    def __init__(self, pid: int, interval: float = 0.02) -> None:
        self.process = psutil.Process(pid)
        self.interval = interval
        self.peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self.peak = max(self.peak, _rss(self.process))
            except psutil.Error:
                return
            self._stop.wait(self.interval)

    def __enter__(self) -> PeakRss:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    @property
    def peak_mb(self) -> float:
        return round(self.peak / 2**20, 1)
