"""What a resource's facade needs from its client: a driver that performs calls.

Each resource module holds, once, the builders of its requests (functions returning a typed
`Call[T]` or `Plan[T]`: what is sent, how the answer is read; `_resend` says whether it may be
sent again), then two thin facades over them: the blocking one, whose methods return T, and the
asyncio one, whose methods are `async def … -> T` (listings: an iterator, an async iterator).
tests/sdk/test_client_surface.py checks that the two expose the same methods with the same
parameters. The asyncio facade's docstrings are the blocking one's (`share_docs`).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any, Protocol, TypeVar

from jobwire._protocol import Call, Work
from jobwire.models import Page

T = TypeVar("T")


class Driver(Protocol):
    def run(self, work: Work[T]) -> T: ...

    def iterate(self, first: Call[Page[T]]) -> Iterator[T]: ...


class AsyncDriver(Protocol):
    async def run(self, work: Work[T]) -> T: ...

    def iterate(self, first: Call[Page[T]]) -> AsyncIterator[T]: ...


def share_docs(asynchronous: type[Any], blocking: type[Any]) -> None:
    """Gives `asynchronous`'s methods the docstrings of `blocking`'s (said once, for both)."""
    for name, method in vars(asynchronous).items():
        if callable(method) and not name.startswith("_") and method.__doc__ is None:
            method.__doc__ = getattr(blocking, name).__doc__
