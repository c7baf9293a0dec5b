"""Reporter: one background task per attempt that sends progress, log batches and heartbeats in
order, so a handler's tight loop never waits on the network; and what Jobwire last said about
cancellation. Once a report was retried until the attempt's deadline in vain, the attempt is
lost (Jobwire abandons it): nothing more is reported in the background."""

from __future__ import annotations

import asyncio
import logging
import math
import time
from datetime import UTC, datetime
from typing import Any

from jobwire.handler._callbacks import Callbacks
from jobwire.handler._errors import CallbackError

log = logging.getLogger("jobwire.handler")

LOG_BATCH = 500  # Jobwire's limit per logs callback
LOG_FLUSH_INTERVAL = 1.0  # a slow handler's logs show up within about this long
# Entries kept between flushes; beyond it new ones are counted, then dropped.
MAX_PENDING_LOGS = 100_000


class Reporter:
    def __init__(self, execution_id: str, callbacks: Callbacks, heartbeat_interval: float) -> None:
        self._execution_id = execution_id
        self._callbacks = callbacks
        self._heartbeat_interval = heartbeat_interval
        self._logs: list[dict[str, Any]] = []
        self._dropped_logs = 0
        self._progress: dict[str, Any] = {}
        self.cancelled = False
        self.heard_at = -math.inf  # monotonic time of the last cancel_requested answer
        self.asked_at = -math.inf  # monotonic time is_cancelled last asked Jobwire itself
        self.lost = False  # a report gave up at the attempt's deadline
        self._reported_at = time.monotonic()  # the deadline was last moved (or the attempt began)
        self._heartbeating = False  # after a 202: nobody else keeps the attempt alive
        self._wake = asyncio.Event()
        self._closing = False
        self._task: asyncio.Task[None] | None = None

    def progress(self, fields: dict[str, Any]) -> None:
        self._progress.update(fields)
        self._wake.set()

    def log(self, level: str, message: str | None) -> None:
        if self.lost:
            return
        if len(self._logs) >= MAX_PENDING_LOGS:
            self._dropped_logs += 1
            return
        self._logs.append({"level": level, "message": message, "logged_at": datetime.now(UTC).isoformat()})
        if len(self._logs) >= LOG_BATCH:
            self._wake.set()

    async def heartbeat(self, *, retry: bool = True) -> None:
        """Moves the deadline and learns whether to stop; a failure is logged, not raised.
        retry=False: one try (is_cancelled asks so, and answers what it last heard)."""
        try:
            self._heard(await self._callbacks.report(None, retry=retry))
        except CallbackError as exc:
            if exc.gave_up:
                self.lost = True
                return
            log.warning("execution %s: heartbeat failed: %s", self._execution_id, exc)
            self._reported_at = time.monotonic() - self._heartbeat_interval / 2  # try again soon

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run())

    def keep_alive(self) -> None:
        """The attempt was accepted (202): heartbeat from now on until it completes."""
        self._heartbeating = True
        self._wake.set()

    async def close(self) -> None:
        """Stop reporting in the background and send what is pending: the last progress, then
        every buffered log entry."""
        self._closing = True
        self._wake.set()
        if self._task is not None:
            await self._task
        if not self.lost:
            await self._send_progress()
            await self._flush_logs()

    def _heard(self, cancel_requested: bool) -> None:
        self.cancelled = self.cancelled or cancel_requested
        self.heard_at = self._reported_at = time.monotonic()

    async def _run(self) -> None:
        flush_at = time.monotonic() + LOG_FLUSH_INTERVAL
        while True:
            heartbeat_at = self._reported_at + self._heartbeat_interval if self._heartbeating else math.inf
            wait = min(flush_at, heartbeat_at) - time.monotonic()
            if wait > 0:
                try:
                    async with asyncio.timeout(wait):
                        await self._wake.wait()
                except TimeoutError:
                    pass
            self._wake.clear()
            if self._closing or self.lost:
                return
            try:
                await self._send_progress()
                if len(self._logs) >= LOG_BATCH or time.monotonic() >= flush_at:
                    await self._flush_logs()
                    flush_at = time.monotonic() + LOG_FLUSH_INTERVAL
                if self._heartbeating and time.monotonic() >= self._reported_at + self._heartbeat_interval:
                    await self.heartbeat()
            except Exception:  # a bug here must not end the heartbeats of a running attempt
                log.exception("execution %s: reporting failed", self._execution_id)
                await asyncio.sleep(self._heartbeat_interval / 4)

    async def _send_progress(self) -> None:
        snapshot, self._progress = self._progress, {}
        if not snapshot:
            return
        try:
            self._heard(await self._callbacks.report(snapshot))
        except CallbackError as exc:
            if exc.gave_up:
                self.lost = True
            else:  # refused: sending it again changes nothing
                log.warning("execution %s: progress not sent: %s", self._execution_id, exc)

    async def _flush_logs(self) -> None:
        if self._dropped_logs:
            self._logs.append({"level": "WARN", "message": f"{self._dropped_logs} log entries dropped: "
                               "Jobwire could not take them fast enough", "logged_at": datetime.now(UTC).isoformat()})
            self._dropped_logs = 0
        while self._logs:
            batch, self._logs = self._logs[:LOG_BATCH], self._logs[LOG_BATCH:]
            try:
                await self._callbacks.append_logs(batch)
            except CallbackError as exc:
                if exc.gave_up:
                    self.lost = True
                    self._logs = []
                    return
                log.warning("execution %s: %d log entries dropped: %s", self._execution_id, len(batch), exc)
