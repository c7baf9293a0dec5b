"""A no-op handler for benchmarks: answers 200 {"result": null} (or 202), counts every
webhook-id it sees; GET /stats reports {received, distinct, duplicates, first_at, last_at}."""

from __future__ import annotations

import argparse
import collections
import time

from aiohttp import web

seen: collections.Counter[str] = collections.Counter()
times: dict[str, float] = {}


async def work(request: web.Request) -> web.Response:
    await request.read()
    seen[request.headers.get("webhook-id", "")] += 1
    now = time.time()
    times.setdefault("first_at", now)
    times["last_at"] = now
    return web.Response(status=200, body=b'{"result":null}', content_type="application/json")


async def stats(_: web.Request) -> web.Response:
    dups = sum(1 for v in seen.values() if v > 1)
    return web.json_response({"received": sum(seen.values()), "distinct": len(seen), "duplicates": dups, **times})


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args()
    app = web.Application()
    app.router.add_post("/work", work)
    app.router.add_get("/stats", stats)
    try:
        import uvloop
        uvloop.install()
    except ImportError:
        pass
    web.run_app(app, host="127.0.0.1", port=args.port, access_log=None, print=None)


if __name__ == "__main__":
    main()
