"""The service's commands of the one `jobwire` command: `serve`, `migrate`, `openapi`.

The SDK (sdk/python, `jobwire.cli`) owns the command and its client commands; it finds these
through the entry-point group `jobwire.commands` (pyproject.toml), and calls each registrar with
its argparse subparsers: the registrar adds its parser and `set_defaults(run=...)`, and `run(args)`
does the work. So `pip install jobwire-sdk` alone gives an application the client commands
without FastAPI, SQLAlchemy or an embedded PostgreSQL, and installing the service adds these."""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import NoReturn

from pydantic import ValidationError

from app import logging_setup
from app.config import Settings, unknown_variables
from app.domain.logfields import fields
from app.startup import EXIT_STATUS, StartupFailure, open_files_limit

log = logging.getLogger("jobwire")


def _cannot(doing: str, *failures: StartupFailure) -> NoReturn:
    """One line per failure on stderr, `jobwire: cannot <doing>: <SETTING>: <cause>` (plain text
    whatever JOBWIRE_LOG_FORMAT says: it may be the setting at fault), and exit 2."""
    for failure in failures:
        print(f"jobwire: cannot {doing}: {failure.setting}: {failure.cause}", file=sys.stderr, flush=True)
    sys.exit(EXIT_STATUS)


def _settings(doing: str = "start", **overrides: object) -> Settings:
    try:
        return Settings(**{k: v for k, v in overrides.items() if v is not None})  # type: ignore[arg-type]
    except ValidationError as exc:
        _cannot(doing, *(StartupFailure(f"JOBWIRE_{'_'.join(map(str, e['loc'])).upper()}",
                                        str(e["msg"]).removeprefix("Value error, ")) for e in exc.errors()))


def _check_environment() -> None:
    """Warns of JOBWIRE_* variables that name no setting. (JOBWIRE_API_KEY on a server that takes
    no key is refused once the database says whether it holds keys: app/main.py.)"""
    for name, closest in unknown_variables(os.environ):
        hint = f"; did you mean {closest}?" if closest else ""
        log.warning("%s is not a Jobwire setting: ignored%s", name, hint,
                    extra=fields(variable=name, closest_setting=closest))


class _AfterStartupFailure(logging.Filter):
    """Leaves out uvicorn's account of a start-up failure that `jobwire serve` says in one line
    itself (the lifespan's traceback, "Application startup failed. Exiting.")."""

    def __init__(self, app: object) -> None:
        super().__init__()
        self.app = app

    def filter(self, record: logging.LogRecord) -> bool:
        return getattr(self.app.state, "startup_failure", None) is None  # type: ignore[attr-defined]


def _serve(args: argparse.Namespace) -> None:
    _node(args, dev=False)


def _dev(args: argparse.Namespace) -> None:
    _node(args, dev=True)


def _node(args: argparse.Namespace, *, dev: bool) -> None:
    """`jobwire serve`, or with `dev` the node of `jobwire dev`: on the embedded PostgreSQL, with
    the sample handler (app/dev.py)."""
    import asyncio
    import errno
    import gc
    import signal
    import socket

    import uvicorn

    from app.api.draining import begin_draining
    from app.main import announce, create_app
    from app.startup import bind, listen_failure

    class Server(uvicorn.Server):
        def handle_exit(self, sig: int, frame: object) -> None:
            again = self.should_exit and sig == signal.SIGINT
            super().handle_exit(sig, frame)  # type: ignore[arg-type]
            # uvicorn re-raises a captured SIGTERM/SIGINT after its graceful shutdown, so the
            # process would die by the signal (exit 143); a node that drained cleanly exits 0.
            self._captured_signals = [s for s in self._captured_signals
                                      if s not in (signal.SIGTERM, signal.SIGINT)]
            if again:
                # A second Ctrl-C: the drain stops waiting (the calls left are abandoned and
                # re-enqueued). A signal handler runs between the loop's steps: wake it.
                cut_short = getattr(app.state, "cut_short", None)
                if cut_short is not None and self._loop is not None:
                    self._loop.call_soon_threadsafe(cut_short.set)

        async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
            # uvicorn now waits for every open response before the lifespan's shutdown: the event
            # streams, which never end by themselves, end first (app/api/draining.py).
            begin_draining(app)
            await super().shutdown(sockets)
            # uvicorn skips the application's shutdown after a second Ctrl-C; the node's (abandon
            # what is in flight, forget its heartbeat, stop the embedded PostgreSQL) must run.
            if self.force_exit and not getattr(app.state, "stopping", False):
                await self.lifespan.shutdown()

        _loop: asyncio.AbstractEventLoop | None = None

        async def startup(self, sockets: list[socket.socket] | None = None) -> None:
            self._loop = asyncio.get_running_loop()
            try:
                await super().startup(sockets)
                # listen() fails when another process took the port since it was bound; uvloop
                # does not say so, and would serve nothing.
                if hasattr(socket, "SO_ACCEPTCONN") and not sock.getsockopt(socket.SOL_SOCKET, socket.SO_ACCEPTCONN):
                    raise OSError(errno.EADDRINUSE, os.strerror(errno.EADDRINUSE))
            except OSError as exc:
                app.state.startup_failure = listen_failure(exc, settings.host, settings.port)
                for server in getattr(self, "servers", ()):
                    server.close()
                await self.lifespan.shutdown()
                sys.exit(EXIT_STATUS)
            # What start-up built (FastAPI, pydantic, SQLAlchemy, the services) lives as long as
            # the process: move it out of the cyclic collector's reach, so its full collections
            # walk only what requests create (bench/README.md, "Figures the code rests on").
            gc.collect()
            gc.freeze()
            announce(app)  # "serving on": the port takes connections from now on
            if dev:
                from app.dev import first_job_lines

                print("\n".join(first_job_lines(settings)), flush=True)

    settings = _settings(host=args.host, port=args.port)
    if dev and settings.database_url:
        print("jobwire dev: JOBWIRE_DATABASE_URL is ignored: dev runs on its embedded PostgreSQL in "
              f"{settings.data_dir / 'pg'} (`jobwire serve` uses the URL)", file=sys.stderr, flush=True)
        settings = settings.model_copy(update={"database_url": None})
    logging_setup.configure(settings.log_format, args.log_level)
    _check_environment()
    _open_files(settings)
    # Bound first, so that a port in use is said at once, before PostgreSQL starts or migrations
    # run; uvicorn listens on it once the node has started.
    try:
        sock = bind(settings.host, settings.port)
    except StartupFailure as failure:
        _cannot("start", failure)
    if dev:
        from app.dev import create_dev_app

        app = create_dev_app(settings, environ=os.environ)
    else:
        app = create_app(settings, environ=os.environ)
    logging.getLogger("uvicorn.error").addFilter(_AfterStartupFailure(app))
    config = uvicorn.Config(
        app,
        host=settings.host,
        port=settings.port,
        loop="uvloop" if sys.platform != "win32" else "asyncio",
        http="httptools",
        access_log=False,
        log_config=None,  # logging_setup's handler formats uvicorn's lines too
        log_level=args.log_level,
        timeout_graceful_shutdown=settings.shutdown_grace + 5,
    )
    try:
        Server(config).run(sockets=[sock])
    except SystemExit:
        # The lifespan (app/main.py) recorded what failed; uvicorn only exits.
        failure = getattr(app.state, "startup_failure", None)
        if failure is not None:
            _cannot("start", failure)
        raise


def _open_files(settings: Settings) -> None:
    """The open-files limit raised for the node's connections, or a warning naming what it needs:
    a connection per call in flight and, at worst, one per handler calling back, each PostgreSQL
    connection and event delivery, and some spare (the listening socket, log files, the embedded
    server's pipes)."""
    needed = 2 * settings.concurrency + settings.event_concurrency + settings.db_pool_size + 64
    limit = open_files_limit(needed)
    if limit is not None and 0 <= limit[0] < needed:  # RLIM_INFINITY (no limit) is negative
        log.warning("open files are limited to %d (hard limit %d); JOBWIRE_CONCURRENCY=%d may need up to %d (a "
                    "connection per call in flight and per handler calling back): raise the limit (ulimit -n, "
                    "systemd's LimitNOFILE) or lower JOBWIRE_CONCURRENCY", limit[0], limit[1], settings.concurrency,
                    needed, extra=fields(open_files=limit[0], open_files_needed=needed))


def _migrate(_: argparse.Namespace) -> None:
    from app.db.embedded import EmbeddedPostgres, EmbeddedStartFailed
    from app.db.migrate import upgrade_sync
    from app.startup import database_failure

    settings = _settings("migrate")
    logging_setup.configure(settings.log_format)
    embedded = None
    url = settings.database_url
    if not url:
        embedded = EmbeddedPostgres(settings.data_dir)
        try:
            url = embedded.start()
        except EmbeddedStartFailed as exc:
            _cannot("migrate", StartupFailure("JOBWIRE_DATA_DIR", str(exc)))
    try:
        upgrade_sync(url, settings.db_schema)
        print("migrations at head")
    except Exception as exc:
        failure = database_failure(exc, url, "JOBWIRE_DATA_DIR" if embedded else "JOBWIRE_DATABASE_URL")
        if failure is None:
            raise
        _cannot("migrate", failure)
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


def _run(command: Callable[[argparse.Namespace], None]) -> Callable[[argparse.Namespace], None]:
    """Plain text lines until the command has read JOBWIRE_LOG_FORMAT (serve and migrate apply it
    once they have their settings)."""

    def run(args: argparse.Namespace) -> None:
        logging_setup.configure()
        command(args)

    return run


def serve_command(subparsers: argparse._SubParsersAction) -> None:
    """Adds `jobwire serve [--host H] [--port P] [--log-level info]`."""
    serve = subparsers.add_parser("serve", help="run the API and the dispatcher")
    _node_options(serve)
    serve.set_defaults(run=_run(_serve))


def _node_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--host", help="listen address (JOBWIRE_HOST)")
    parser.add_argument("--port", type=int, help="listen port (JOBWIRE_PORT)")
    parser.add_argument("--log-level", default="info", choices=tuple(logging_setup.LEVELS),
                        help="of Jobwire's and uvicorn's lines (JOBWIRE_LOG_FORMAT: their format)")


def dev_command(subparsers: argparse._SubParsersAction) -> None:
    """Adds `jobwire dev`, which takes serve's options."""
    dev = subparsers.add_parser("dev", help="serve on the embedded PostgreSQL with a sample handler, `echo`, and "
                                            "print a first job's command")
    _node_options(dev)
    dev.set_defaults(run=_run(_dev))


def migrate_command(subparsers: argparse._SubParsersAction) -> None:
    """Adds `jobwire migrate`."""
    subparsers.add_parser("migrate", help="alembic upgrade head").set_defaults(run=_run(_migrate))


def openapi_command(subparsers: argparse._SubParsersAction) -> None:
    """Adds `jobwire openapi [--output openapi/openapi.json]`."""
    openapi = subparsers.add_parser("openapi", help="write the OpenAPI document")
    openapi.add_argument("--output", default="openapi/openapi.json")
    openapi.set_defaults(run=_run(_openapi))
