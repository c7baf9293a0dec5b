"""What the peer drivers share: argument parsing, timing a drain by an empty-queue poller."""

from __future__ import annotations

import argparse
import asyncio
import time
from collections.abc import Awaitable, Callable


def parse_args(doc: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--dsn", required=True)
    parser.add_argument("--jobs", type=int, required=True)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--clients", type=int, default=16)
    return parser.parse_args()


class DrainClock:
    """first: the first handler call; empty: the first time `is_empty` (polled every 25 ms
    after the first call) is true. jobs/s = handled ÷ (empty − first)."""

    def __init__(self) -> None:
        self.first: float | None = None
        self.empty: float | None = None
        self.handled = 0

    def tick(self) -> None:
        if self.first is None:
            self.first = time.perf_counter()
        self.handled += 1

    async def poll(self, is_empty: Callable[[], Awaitable[bool]], stop: asyncio.Event) -> None:
        while not stop.is_set():
            if self.first is not None and await is_empty():
                self.empty = time.perf_counter()
                return
            await asyncio.sleep(0.025)

    def result(self, n: int, ended: float, started: float) -> dict:
        empty = self.empty or ended
        assert self.first is not None, "no job was handled"
        return {"jobs": n, "handled": self.handled, "lost": n - self.handled,
                "jobs_per_s": round(self.handled / (empty - self.first), 1),
                "jobs_per_s_to_exit": round(self.handled / (ended - self.first), 1),
                "start_delay_s": round(self.first - started, 3)}


def rate(n: int, seconds: float) -> dict:
    return {"jobs": n, "seconds": round(seconds, 3), "jobs_per_s": round(n / seconds, 1)}
