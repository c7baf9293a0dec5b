"""A handler's Retry-After and Date headers, crafted, over real HTTP through both transports: one
that is not ASCII delta-seconds or a usable HTTP date is treated as absent, and the attempt is
the plain HTTP failure it was, never an internal dispatch error. A failure body beside a
Retry-After names the attempt's error, and the delay stands."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from uuid import uuid4

import pytest

from app.domain.dispatch import ClaimedJob, OutcomeKind
from app.domain.executions import ErrorType
from app.domain.signing import new_handler_secret
from app.delivery.dispatch import call_handler
from app.delivery.transport import AiohttpTransport, Http11Transport, Transport

OVERFLOWING_DATE = b"Mon, 01 Jan 99999999999 00:00:00 GMT"  # parsedate_to_datetime: OverflowError


async def replying(head: bytes, body: bytes = b"") -> asyncio.base_events.Server:
    """A handler that answers every request with the status line and headers `head`, and `body`."""
    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            request = await reader.readuntil(b"\r\n\r\n")
            length = next((int(line.split(b":", 1)[1]) for line in request.split(b"\r\n")
                           if line.lower().startswith(b"content-length:")), 0)
            await reader.readexactly(length)
            writer.write(head + b"Content-Length: %d\r\nConnection: close\r\n\r\n" % len(body) + body)
            await writer.drain()
        finally:
            writer.close()

    return await asyncio.start_server(serve, "127.0.0.1", 0)


@pytest.fixture(params=["http11", "aiohttp"])
async def transport(request: pytest.FixtureRequest) -> AsyncIterator[Transport]:
    t: Transport = Http11Transport(8, 10_000) if request.param == "http11" else AiohttpTransport(8, 10_000)
    yield t
    await t.close()


def job_for(url: str) -> ClaimedJob:
    now = datetime.now(UTC)
    return ClaimedJob(
        id=uuid4(), job_id="j", job_type="DELAYED", queue="default", attempt=1, max_attempts=5, payload=None,
        parameters=None, metadata=None, scheduled_at=now, started_at=now, deadline_at=now + timedelta(seconds=10),
        seconds_left=10.0, handler="h", handler_url=url, handler_secret=new_handler_secret())


@pytest.mark.parametrize(("head", "retry_after"), [
    pytest.param(b"HTTP/1.1 503 Service Unavailable\r\nRetry-After: \xb2\r\n", None, id="superscript-two"),
    pytest.param("HTTP/1.1 503 Service Unavailable\r\nRetry-After: ١٢\r\n".encode(), None, id="arabic-indic-12"),
    pytest.param(b"HTTP/1.1 503 Service Unavailable\r\nRetry-After: " + OVERFLOWING_DATE + b"\r\n", None,
                 id="retry-after-a-20-digit-year"),
    pytest.param(b"HTTP/1.1 429 Too Many Requests\r\nRetry-After: 7\r\nDate: " + OVERFLOWING_DATE + b"\r\n", 7.0,
                 id="date-a-20-digit-year"),
    pytest.param(b"HTTP/1.1 429 Too Many Requests\r\nRetry-After: 7\r\n", 7.0, id="plain-seconds"),
])
async def test_a_crafted_retry_header_is_absent_and_the_attempt_a_plain_http_failure(
        transport: Transport, head: bytes, retry_after: float | None) -> None:
    server = await replying(head)
    try:
        port = server.sockets[0].getsockname()[1]
        outcome = await call_handler(transport, job_for(f"http://127.0.0.1:{port}/h"), "http://x/cb", "1.t", 3600.0)
    finally:
        server.close()
        await server.wait_closed()
    assert (outcome.kind, outcome.error_type, outcome.retry_after) == (
        OutcomeKind.FAILED, ErrorType.HTTP_STATUS, retry_after)


async def test_a_failure_body_names_the_error_through_either_transport_retry_after_kept(transport: Transport) -> None:
    body = b'{"error": {"type": "RateLimited", "message": "slow down"}, "retryable": true}'
    server = await replying(b"HTTP/1.1 429 Too Many Requests\r\nRetry-After: 7\r\nContent-Type: application/json\r\n",
                            body)
    try:
        port = server.sockets[0].getsockname()[1]
        outcome = await call_handler(transport, job_for(f"http://127.0.0.1:{port}/h"), "http://x/cb", "1.t", 3600.0)
    finally:
        server.close()
        await server.wait_closed()
    assert (outcome.kind, outcome.error_type, outcome.error, outcome.retryable, outcome.retry_after) == (
        OutcomeKind.FAILED, "RateLimited", "slow down", True, 7.0)
