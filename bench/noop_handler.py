"""The benchmark's no-op handler, a separate process: a bare HTTP/1.1 server (httptools on uvloop).

    python -m bench.noop_handler --port 9100

POST /sync      answers 200 {"result": null}
POST /batch     a batching handler's call ({"executions": [...]}, issue 26): answers 200 with a
                succeeded outcome for each execution
POST /callback  answers 202, then reports {"outcome": "succeeded"} to the request's
                callback URL (POST {callback.url}/complete, Bearer token) with Jobwire's own
                HTTP/1.1 client (app/delivery/http11.py: a third of aiohttp's client CPU per
                call, so the handler is not what callback mode measures)
Every dispatch is recorded by execution id (the webhook-id header is "<execution id>.<attempt>"):
GET  /stats     {received, distinct, dispatched_twice, first_at, last_at, completions_ok, completions_failed}
POST /reset     forgets everything recorded
GET  /wait/{id} waits until that execution was received; {"received_at": unix time}

It stands in for the user's service, whose cost is not Jobwire's: it shares the machine with
Jobwire and PostgreSQL (the peers run no handler at all), so it does as little as a server can:
a protocol on httptools' parser, keep-alive, bodies by Content-Length or chunked, no framework
(aiohttp's server took 0.35 of a core in a sync drain of ~3,700 jobs/s on 2 cores).
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import time
from collections.abc import Awaitable, Callable

import httptools
import orjson

from app.delivery.http11 import Http11Client

OK_BODY = b'{"result":null}'
COMPLETE_BODY = b'{"outcome":"succeeded"}'
_REASONS = {200: b"OK", 202: b"Accepted", 400: b"Bad Request", 404: b"Not Found", 504: b"Gateway Timeout"}


class Recorder:
    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self.seen: collections.Counter[str] = collections.Counter()
        self.arrived: dict[str, float] = {}
        self.waiters: dict[str, asyncio.Future[float]] = {}
        self.first_at: float | None = None
        self.last_at: float | None = None
        self.completions_ok = 0
        self.completions_failed = 0
        self.received = 0

    def record(self, webhook_id: str) -> None:
        now = time.time()
        execution_id = webhook_id.rsplit(".", 1)[0]
        self.received += 1
        self.seen[execution_id] += 1
        self.arrived.setdefault(execution_id, now)
        if self.first_at is None:
            self.first_at = now
        self.last_at = now
        waiter = self.waiters.pop(execution_id, None)
        if waiter is not None and not waiter.done():
            waiter.set_result(now)

    def stats(self) -> dict:
        return {
            "received": self.received,
            "distinct": len(self.seen),
            "dispatched_twice": sum(1 for v in self.seen.values() if v > 1),
            "first_at": self.first_at,
            "last_at": self.last_at,
            "completions_ok": self.completions_ok,
            "completions_failed": self.completions_failed,
        }


def response(status: int, body: bytes = b"", keep_alive: bool = True) -> bytes:
    head = b"HTTP/1.1 %d %s\r\ncontent-length: %d\r\n" % (status, _REASONS.get(status, b"Status"), len(body))
    if body:
        head += b"content-type: application/json\r\n"
    if not keep_alive:
        head += b"connection: close\r\n"
    return head + b"\r\n" + body


SYNC_REPLY = response(200, OK_BODY)
ACCEPTED_REPLY = response(202)


class Handler:
    """The routes; each answers (status, body) or, for /sync and /callback, ready bytes."""

    def __init__(self) -> None:
        self.rec = Recorder()
        self.client: Http11Client | None = None
        self.background: set[asyncio.Task[None]] = set()

    def sync(self, webhook_id: str) -> bytes:
        self.rec.record(webhook_id)
        return SYNC_REPLY

    def batch(self, body: bytes) -> bytes:
        executions = orjson.loads(body)["executions"]
        for e in executions:
            self.rec.record(f"{e['execution_id']}.{e['attempt']}")
        return response(200, orjson.dumps({"outcomes": [{"execution_id": e["execution_id"], "outcome": "succeeded"}
                                                        for e in executions]}))

    def callback(self, webhook_id: str, body: bytes) -> bytes:
        document = orjson.loads(body)
        self.rec.record(webhook_id)
        task = asyncio.create_task(self.complete(document["callback"]["url"], document["callback"]["token"]))
        self.background.add(task)
        task.add_done_callback(self.background.discard)
        return ACCEPTED_REPLY

    async def complete(self, url: str, token: str) -> None:
        if self.client is None:
            self.client = Http11Client(limit=128, max_body=1 << 20)
        try:
            async with asyncio.timeout(60):
                r = await self.client.post(f"{url}/complete", COMPLETE_BODY, {
                    "authorization": f"Bearer {token}", "content-type": "application/json"})
            if r.status == 200:
                self.rec.completions_ok += 1
            else:
                self.rec.completions_failed += 1
        except Exception:
            self.rec.completions_failed += 1

    async def other(self, method: bytes, path: str) -> tuple[int, bytes]:
        if method == b"GET" and path == "/stats":
            return 200, orjson.dumps(self.rec.stats())
        if method == b"POST" and path == "/reset":
            self.rec.reset()
            return 200, b'{"ok":true}'
        if method == b"GET" and path.startswith("/wait/"):
            execution_id = path.removeprefix("/wait/")
            if execution_id not in self.rec.arrived:
                fut = self.rec.waiters.setdefault(execution_id, asyncio.get_running_loop().create_future())
                try:
                    await asyncio.wait_for(fut, 30)
                except TimeoutError:
                    return 504, b'{"error":"not received"}'
            return 200, orjson.dumps({"received_at": self.rec.arrived[execution_id]})
        return 404, b'{"error":"no such route"}'


class Connection(asyncio.Protocol):
    """One client connection: requests parsed by httptools, answered in order."""

    def __init__(self, handler: Handler) -> None:
        self.handler = handler
        self.parser = httptools.HttpRequestParser(self)
        self.transport: asyncio.Transport | None = None
        self.url = b""
        self.body: list[bytes] = []
        self.webhook_id = ""
        self.pending: collections.deque[Awaitable[tuple[bytes, bool]]] = collections.deque()
        self.writer: asyncio.Task[None] | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserError:
            self._send(response(400, keep_alive=False))
            if self.transport is not None:
                self.transport.close()

    # httptools callbacks
    def on_message_begin(self) -> None:
        self.url, self.body, self.webhook_id = b"", [], ""

    def on_url(self, url: bytes) -> None:
        self.url += url

    def on_header(self, name: bytes, value: bytes) -> None:
        if name.lower() == b"webhook-id":
            self.webhook_id = value.decode()

    def on_body(self, body: bytes) -> None:
        self.body.append(body)

    def on_message_complete(self) -> None:
        method = self.parser.get_method()
        path = self.url.split(b"?", 1)[0].decode()
        keep_alive = self.parser.should_keep_alive()
        if method == b"POST" and path == "/sync" and not self.pending:
            self._send(self.handler.sync(self.webhook_id))  # the hot path: answered at once
        elif method == b"POST" and path == "/batch" and not self.pending:
            self._send(self.handler.batch(b"".join(self.body)))
        elif method == b"POST" and path == "/callback" and not self.pending:
            self._send(self.handler.callback(self.webhook_id, b"".join(self.body)))
        else:
            self.pending.append(self._answer(method, path, self.webhook_id, b"".join(self.body), keep_alive))
            if self.writer is None:
                self.writer = asyncio.create_task(self._write_in_order())
            return
        if not keep_alive and self.transport is not None:
            self.transport.close()

    async def _answer(self, method: bytes, path: str, webhook_id: str, body: bytes,
                      keep_alive: bool) -> tuple[bytes, bool]:
        if method == b"POST" and path == "/sync":
            return self.handler.sync(webhook_id), keep_alive
        if method == b"POST" and path == "/callback":
            return self.handler.callback(webhook_id, body), keep_alive
        if method == b"POST" and path == "/batch":
            return self.handler.batch(body), keep_alive
        status, reply = await self.handler.other(method, path)
        return response(status, reply, keep_alive), keep_alive

    async def _write_in_order(self) -> None:
        while self.pending:
            reply, keep_alive = await self.pending.popleft()
            self._send(reply)
            if not keep_alive and self.transport is not None:
                self.transport.close()
        self.writer = None

    def _send(self, data: bytes) -> None:
        if self.transport is not None and not self.transport.is_closing():
            self.transport.write(data)

    def connection_lost(self, exc: Exception | None) -> None:
        self.transport = None


async def serve(port: int, ready: Callable[[], None] | None = None) -> None:
    handler = Handler()
    server = await asyncio.get_running_loop().create_server(lambda: Connection(handler), "127.0.0.1", port,
                                                            backlog=1024)
    if ready is not None:
        ready()
    async with server:
        await server.serve_forever()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args()
    import uvloop

    uvloop.run(serve(args.port))


if __name__ == "__main__":
    main()
