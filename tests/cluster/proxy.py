"""A TCP proxy in front of the test PostgreSQL that a test can cut and restore: Jobwire nodes
connect to it as to the database. Upstream is the server's TCP port or, for the embedded server,
its unix socket (the proxy listens on TCP either way)."""

from __future__ import annotations

import asyncio
import contextlib
import os

from sqlalchemy.engine import make_url

from tests.conftest import free_port


class CuttableProxy:
    def __init__(self, database_url: str) -> None:
        url = make_url(database_url)
        socket_dir = url.query.get("host")
        if url.host:
            self._open = lambda: asyncio.open_connection(url.host, url.port or 5432)
        else:
            path = os.path.join(str(socket_dir), f".s.PGSQL.{url.port or 5432}")
            self._open = lambda: asyncio.open_unix_connection(path)
        self.port = free_port()
        # The URL nodes use: the proxy's port, the same user and database.
        self.url = url.set(host="127.0.0.1", port=self.port, query={}).render_as_string(hide_password=False)
        self.cut = False
        self._pairs: set[asyncio.StreamWriter] = set()
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._accept, "127.0.0.1", self.port)

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self.cut:  # the database is "unreachable": the connection is dropped at once
            writer.close()
            return
        try:
            up_reader, up_writer = await self._open()
        except OSError:
            writer.close()
            return
        if self.cut:  # cut while it connected upstream: sever() has not seen this pair
            writer.close()
            up_writer.close()
            return
        self._pairs.update((writer, up_writer))
        for source, sink in ((reader, up_writer), (up_reader, writer)):
            task = asyncio.create_task(self._pipe(source, sink, (writer, up_writer)))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def _pipe(self, source: asyncio.StreamReader, sink: asyncio.StreamWriter,
                    pair: tuple[asyncio.StreamWriter, asyncio.StreamWriter]) -> None:
        try:
            while data := await source.read(65536):
                sink.write(data)
                await sink.drain()
        except (OSError, ConnectionError):
            pass
        finally:
            for end in pair:
                self._pairs.discard(end)
                end.close()

    def sever(self) -> None:
        """Cut every connection through the proxy and refuse new ones until restore()."""
        self.cut = True
        for end in list(self._pairs):
            with contextlib.suppress(Exception):
                end.transport.abort()
        self._pairs.clear()

    def restore(self) -> None:
        self.cut = False

    async def stop(self) -> None:
        self.sever()
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
