"""LISTEN on a dedicated asyncpg connection, reconnecting when it drops."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

import asyncpg

log = logging.getLogger(__name__)


class NotifyListener:
    def __init__(self, dsn: str, channel: str, on_notify: Callable[[], None], server_settings: dict[str, str],
                 retry_interval: float = 1.0) -> None:
        self.dsn = dsn
        self.channel = channel
        self.on_notify = on_notify
        self.server_settings = server_settings
        self.retry_interval = retry_interval
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name="jobwire-listen")

    async def _run(self) -> None:
        while True:
            conn = None
            try:
                conn = await asyncpg.connect(self.dsn, server_settings=self.server_settings)
                lost = asyncio.Event()
                conn.add_termination_listener(lambda _c, lost=lost: lost.set())
                await conn.add_listener(self.channel, lambda *_args: self.on_notify())
                # Anything enqueued while we were not listening is found by this wake-up.
                self.on_notify()
                await lost.wait()
                log.warning("LISTEN connection lost; reconnecting")
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                log.warning("LISTEN connection failed (%s); retrying in %.1fs", exc, self.retry_interval)
            finally:
                if conn is not None and not conn.is_closed():
                    await conn.close(timeout=2)
            await asyncio.sleep(self.retry_interval)

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
