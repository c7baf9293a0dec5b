"""The event deliverer: every node's loop that sends event deliveries to subscribers.

Each turn: record the outcomes of the tries that ended (first: a later event of an execution
waits for them), pump the feed into deliveries, claim as many due ones as there are free slots
(at most JOBWIRE_EVENT_CONCURRENCY requests in flight), start them, then wait for one to end or
for the poll interval. Outcomes and the next claim share one transaction, and the pump runs at
most every `pump_interval` (unless the last one was full). While the node's dispatcher is busy
(`dispatch_busy`: half its slots or more in flight), deliveries give way to jobs: a turn waits
`batch_window` for more tries to end and a claim waits for half the slots to be free, so the
database and the CPU see batches, not a statement per delivery; events catch up once the jobs
ease off. It has its own HTTP client
and never runs inside a job's transaction, so it cannot slow the dispatch of jobs beyond the
database work it shares.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

from app.delivery.events import deliver
from app.delivery.secret_cipher import PLAIN, SecretCipher
from app.delivery.transport import Transport
from app.domain.errors import DatabaseUnavailable
from app.domain.logfields import fields
from app.domain.subscriptions import DeliveryOutcome
from app.services.event_delivery import PUMP_BATCH, EventDeliveryService

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class DelivererConfig:
    concurrency: int = 16  # JOBWIRE_EVENT_CONCURRENCY: requests in flight on this node
    poll_interval: float = 0.25  # idle: commit to first try within about this
    pump_interval: float = 0.05  # busy: the most often the feed is pumped
    batch_window: float = 0.02  # dispatch busy: how long a turn waits for more tries to end
    housekeeping_interval: float = 30.0


class EventDeliverer:
    def __init__(self, config: DelivererConfig, service: EventDeliveryService, transport: Transport,
                 cipher: SecretCipher = PLAIN, dispatch_busy: Callable[[], bool] = lambda: False) -> None:
        self.config = config
        self.service = service
        self.transport = transport
        self.cipher = cipher
        self.dispatch_busy = dispatch_busy
        self._in_flight: set[asyncio.Task[DeliveryOutcome]] = set()
        self._ended: list[DeliveryOutcome] = []
        self._task: asyncio.Task[None] | None = None
        self._stopping = False
        self._pumped_at = float("-inf")
        self._pump_full = False

    @property
    def in_flight(self) -> int:
        return len(self._in_flight)

    def start(self) -> None:
        self._task = asyncio.create_task(self._loop(), name="jobwire-event-deliverer")

    async def _loop(self) -> None:
        next_housekeeping = time.monotonic()
        failures = 0
        while not self._stopping:
            try:
                busy = await self.turn()
                if time.monotonic() >= next_housekeeping:
                    await self.service.housekeeping()
                    next_housekeeping = time.monotonic() + self.config.housekeeping_interval
                failures = 0
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # log and carry on: the database may be back next time
                failures += 1
                log.warning("event delivery failed: %s", exc, exc_info=not isinstance(exc, DatabaseUnavailable),
                            extra=fields(error=str(exc)))
                await asyncio.sleep(min(0.25 * 2 ** min(failures, 5), 5.0))
                continue
            await self._wait(busy)

    async def turn(self) -> bool:
        """One turn; whether there is more to do at once (a full pump or claim)."""
        now = time.monotonic()
        if self._pump_full or now - self._pumped_at >= self.config.pump_interval:
            self._pumped_at = now
            self._pump_full = (await self.service.pump()).scanned >= PUMP_BATCH
        free = self.config.concurrency - len(self._in_flight)
        least = max(1, self.config.concurrency // 2) if self.dispatch_busy() else 1
        wanted = free if free > 0 and (not self._in_flight or free >= least) else 0
        ended, self._ended = self._ended, []
        try:
            claimed = await self.service.settle(ended, wanted)
        except BaseException:
            self._ended[:0] = ended  # kept for the next turn: a lease outlives a short outage
            raise
        for delivery in claimed:
            task = asyncio.create_task(deliver(self.transport, delivery, self.cipher))
            self._in_flight.add(task)
            task.add_done_callback(self._ended_one)
        return self._pump_full or (wanted > 0 and len(claimed) == wanted)

    def _ended_one(self, task: asyncio.Task[DeliveryOutcome]) -> None:
        self._in_flight.discard(task)
        if task.cancelled():
            return  # stopped: its lease runs out and another try sends it again
        exc = task.exception()
        if exc is not None:
            log.error("event delivery crashed: %s", exc, exc_info=exc)
            return
        self._ended.append(task.result())

    async def _wait(self, busy: bool) -> None:
        if busy and len(self._in_flight) < self.config.concurrency:
            await asyncio.sleep(0)
            return
        if self._in_flight:
            done, _ = await asyncio.wait(set(self._in_flight), timeout=self.config.poll_interval,
                                         return_when=asyncio.FIRST_COMPLETED)
            if done and self._in_flight and self.dispatch_busy():
                await asyncio.sleep(self.config.batch_window)  # the others ending meanwhile join this turn
        else:
            await asyncio.sleep(self.config.poll_interval)

    async def stop(self, grace: float) -> None:
        """Stop claiming; let the requests in flight end within `grace` seconds and record them.
        Those still open are cancelled: their leases run out and another node sends them again."""
        self._stopping = True
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None
        if self._in_flight:
            await asyncio.wait(set(self._in_flight), timeout=grace)
        for task in list(self._in_flight):
            task.cancel()
        await asyncio.gather(*self._in_flight, return_exceptions=True)
        try:
            await self.service.record(self._ended)
        except Exception as exc:
            log.warning("event delivery outcomes not recorded at shutdown: %s", exc, extra=fields(error=str(exc)))
        self._ended = []
