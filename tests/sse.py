"""Reading a server-sent event stream (GET /v1/events/stream) in tests: one message at a time, its
comments included, each read within a timeout."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import httpx
import orjson


@dataclass(frozen=True)
class Message:
    """An event message (`id`, `event`, `data` parsed as JSON), or a comment line (`comment`)."""

    id: str | None = None
    event: str | None = None
    data: Any = None
    comment: str | None = None


class SseReader:
    def __init__(self, response: httpx.Response) -> None:
        assert response.status_code == 200, response.status_code
        assert response.headers["content-type"].startswith("text/event-stream"), response.headers
        self._lines: AsyncIterator[str] = response.aiter_lines()

    async def next(self, timeout: float = 30.0) -> Message | None:
        """The next message or comment; None once the server ended the stream. AssertionError when
        nothing comes within `timeout` seconds."""
        try:
            return await asyncio.wait_for(self._read(), timeout)
        except TimeoutError:
            raise AssertionError(f"nothing came on the stream within {timeout} s") from None

    async def _read(self) -> Message | None:
        fields: dict[str, str] = {}
        data: list[str] = []
        async for line in self._lines:
            if line == "":
                if fields or data:
                    return Message(fields.get("id"), fields.get("event"),
                                   orjson.loads("\n".join(data)) if data else None)
                continue
            if line.startswith(":"):
                return Message(comment=line[1:].strip())
            name, _, value = line.partition(":")
            value = value.removeprefix(" ")
            if name == "data":
                data.append(value)
            else:
                fields[name] = value
        return None

    async def events(self, count: int, timeout: float = 30.0) -> list[Message]:
        """The next `count` event messages (comments between them skipped)."""
        found: list[Message] = []
        while len(found) < count:
            message = await self.next(timeout)
            assert message is not None, f"the stream ended after {len(found)} of {count} events"
            if message.comment is None:
                found.append(message)
        return found

    async def quiet(self, timeout: float = 30.0) -> Message:
        """The next message, asserted to be a comment: the stream had nothing more to send (it
        writes its keepalive only after it found the feed's end and waited)."""
        message = await self.next(timeout)
        assert message is not None and message.comment is not None, f"expected the stream to idle, got {message}"
        return message

    async def end(self, timeout: float = 30.0) -> None:
        """Reads until the server ends the stream (comments only, meanwhile), within `timeout`
        seconds in all: AssertionError if it goes on."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                message = await self.next(max(deadline - time.monotonic(), 0.001))
            except AssertionError:
                raise AssertionError(f"the stream still runs after {timeout} s") from None
            if message is None:
                return
            assert message.comment is not None, f"expected the stream to end, got {message}"
