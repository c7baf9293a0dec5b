"""The benchmark's no-op handler, a separate process (aiohttp on uvloop).

    python -m bench.noop_handler --port 9100

POST /sync      answers 200 {"result": null}
POST /callback  answers 202, then reports {"outcome": "succeeded"} to the request's
                callback URL (POST {callback.url}/complete, Bearer token) with Jobwire's own
                HTTP/1.1 client (app/handlers/http11.py: a third of aiohttp's client CPU per
                call, so the handler is not what callback mode measures)
Every dispatch is recorded by execution id (the webhook-id header is "<execution id>.<attempt>"):
GET  /stats     {received, distinct, dispatched_twice, first_at, last_at, completions_ok, completions_failed}
POST /reset     forgets everything recorded
GET  /wait/{id} waits until that execution was received; {"received_at": unix time}
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import time

import orjson
from aiohttp import web

from app.handlers.http11 import Http11Client

OK_BODY = b'{"result":null}'
COMPLETE_BODY = b'{"outcome":"succeeded"}'


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

    def record(self, request: web.Request) -> None:
        now = time.time()
        execution_id = request.headers.get("webhook-id", "").rsplit(".", 1)[0]
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


def build_app() -> web.Application:
    rec = Recorder()
    client: dict[str, Http11Client] = {}
    background: set[asyncio.Task[None]] = set()

    async def start_client(app: web.Application) -> None:
        client["s"] = Http11Client(limit=128, max_body=1 << 20)

    async def stop_client(app: web.Application) -> None:
        await client["s"].close()

    async def sync(request: web.Request) -> web.Response:
        await request.read()
        rec.record(request)
        return web.Response(body=OK_BODY, content_type="application/json")

    async def complete(url: str, token: str) -> None:
        try:
            async with asyncio.timeout(60):
                r = await client["s"].post(f"{url}/complete", COMPLETE_BODY, {
                    "authorization": f"Bearer {token}", "content-type": "application/json"})
            if r.status == 200:
                rec.completions_ok += 1
            else:
                rec.completions_failed += 1
        except Exception:
            rec.completions_failed += 1

    async def callback(request: web.Request) -> web.Response:
        body = orjson.loads(await request.read())
        rec.record(request)
        task = asyncio.create_task(complete(body["callback"]["url"], body["callback"]["token"]))
        background.add(task)
        task.add_done_callback(background.discard)
        return web.Response(status=202)

    async def stats(_: web.Request) -> web.Response:
        return web.json_response(rec.stats())

    async def reset(_: web.Request) -> web.Response:
        rec.reset()
        return web.json_response({"ok": True})

    async def wait(request: web.Request) -> web.Response:
        execution_id = request.match_info["id"]
        if execution_id not in rec.arrived:
            fut = rec.waiters.setdefault(execution_id, asyncio.get_running_loop().create_future())
            await asyncio.wait_for(fut, 30)
        return web.json_response({"received_at": rec.arrived[execution_id]})

    app = web.Application()
    app.on_startup.append(start_client)
    app.on_cleanup.append(stop_client)
    app.router.add_post("/sync", sync)
    app.router.add_post("/callback", callback)
    app.router.add_get("/stats", stats)
    app.router.add_post("/reset", reset)
    app.router.add_get("/wait/{id}", wait)
    return app


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args()
    import uvloop

    uvloop.install()
    web.run_app(build_app(), host="127.0.0.1", port=args.port, access_log=None, print=None)


if __name__ == "__main__":
    main()
