"""What the measurements talk to: a running Jobwire, its database, and the no-op handler."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

import aiohttp
import orjson

# Request and response bodies go through orjson: the standard library's json took ~6 ms of the
# harness's CPU per 1,000-job batch response (~700 KB), time the batch figure then counted.
JSON = {"content-type": "application/json"}
# A batch asks for the ids alone (RFC 7240; issue 26): a server before it answers the executions.
MINIMAL = {**JSON, "prefer": "return=minimal"}

SYNC_HANDLER = "bench-noop-sync"
CALLBACK_HANDLER = "bench-noop-callback"
BATCH_HANDLER = "bench-noop-batch"
BATCH = {"max_size": 50, "max_wait_ms": 0}  # issue 26: batched against PgQueuer's batches of 50


@dataclass
class Target:
    api: str  # http://127.0.0.1:<port> of `jobwire serve`
    handler: str  # http://127.0.0.1:<port> of bench.noop_handler
    dsn: str  # the Jobwire database
    schema: str | None
    jobwire_pid: int
    handler_pid: int


async def expect(resp: aiohttp.ClientResponse, *statuses: int) -> dict:
    if resp.status not in statuses:
        raise RuntimeError(f"{resp.method} {resp.url} → {resp.status}: {await resp.text()}")
    return orjson.loads(await resp.read())


def body(document: Any) -> bytes:
    return orjson.dumps(document)


async def register_handlers(http: aiohttp.ClientSession, t: Target) -> bool:
    """The no-op handlers; False when the server has no handler batching (a baseline before it)."""
    for name, path in ((SYNC_HANDLER, "/sync"), (CALLBACK_HANDLER, "/callback")):
        async with http.put(f"{t.api}/v1/handlers/{name}", json={"url": f"{t.handler}{path}"}) as r:
            await expect(r, 200, 201)
    async with http.put(f"{t.api}/v1/handlers/{BATCH_HANDLER}",
                        json={"url": f"{t.handler}/batch", "batch": BATCH}) as r:
        if r.status == 422 and "batch" in await r.text():  # a baseline before handler batching
            return False
        await expect(r, 200, 201)
    return True


async def set_paused(http: aiohttp.ClientSession, t: Target, queue: str, paused: bool) -> None:
    async with http.post(f"{t.api}/v1/queues/{queue}/{'pause' if paused else 'resume'}") as r:
        await expect(r, 200)


async def enqueue_singly(http: aiohttp.ClientSession, t: Target, queue: str, per: int, clients: int) -> None:
    """`clients` concurrent callers, each sending `per` single `POST /v1/jobs` into `queue`."""
    job = body({"handler": SYNC_HANDLER, "queue": queue, "payload": {"i": 0}})

    async def client() -> None:
        for _ in range(per):
            async with http.post(f"{t.api}/v1/jobs", data=job, headers=JSON) as r:
                await expect(r, 201)

    await asyncio.gather(*(client() for _ in range(clients)))


async def enqueue_batches(http: aiohttp.ClientSession, t: Target, handler: str, queue: str, n: int,
                          batch: int = 1000) -> None:
    for start in range(0, n, batch):
        jobs = [{"handler": handler, "queue": queue, "payload": {"i": i}} for i in range(start, min(start + batch, n))]
        async with http.post(f"{t.api}/v1/jobs/batch", data=body({"jobs": jobs}), headers=MINIMAL) as r:
            await expect(r, 201)


async def handler_call(http: aiohttp.ClientSession, t: Target, method: str, path: str) -> dict:
    async with http.request(method, f"{t.handler}{path}") as r:
        return await expect(r, 200)
