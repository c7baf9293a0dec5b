"""SIGTERM on a `jobwire serve` node with an event stream open: the stream ends at once (cleanly),
and the node exits 0 long before uvicorn would stop waiting for the open response
(JOBWIRE_SHUTDOWN_GRACE + 5 s)."""

from __future__ import annotations

import asyncio
import time

import httpx
import pytest

from tests.cluster.processes import serve, terminate, wait_ready
from tests.sse import SseReader

pytestmark = pytest.mark.cluster


async def test_sigterm_ends_open_event_streams_and_the_node_exits_promptly(tmp_path, fresh_database):
    url = await fresh_database()
    log = tmp_path / "node.log"
    # A grace of 30 s: a node that waited for its open stream would take 35 s to exit.
    node, base = serve({"JOBWIRE_DATABASE_URL": url, "JOBWIRE_SHUTDOWN_GRACE": "30"}, log)
    try:
        await wait_ready(base, node, log)
        async with httpx.AsyncClient(base_url=base, timeout=60) as client:
            async with client.stream("GET", "/v1/events/stream") as response:
                sse = SseReader(response)
                started = time.monotonic()
                exiting = asyncio.ensure_future(asyncio.to_thread(terminate, node, 60))
                await sse.end(timeout=20)  # ended by the node, cleanly (no event was ever made)
                ended = time.monotonic() - started
            code = await exiting
            took = time.monotonic() - started
        assert code == 0, log.read_text()[-3000:]
        assert ended < 10 and took < 20, f"the stream ended after {ended:.1f} s, the node exited after {took:.1f} s"
    finally:
        if node.poll() is None:
            node.kill()
