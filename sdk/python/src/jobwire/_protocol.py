"""The client's protocol, written once for both clients and free of I/O.

Every client call is a *program*: a generator that yields steps (`Send` a request, `Sleep` a
while) and gets back what the step produced (an httpx.Response, or the transport exception that
replaced it). `JobwireClient` runs programs with httpx.Client and time.sleep, `AsyncJobwireClient`
with httpx.AsyncClient and asyncio.sleep; the requests, the retries, the decoding of answers and
refusals and the polling of `wait` are here, the same for both (the sans-I/O style of h11 and
httpcore).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Generator, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Generic, TypeVar
from urllib.parse import quote

import httpx

from jobwire._json import dumps
from jobwire._retry import Retries
from jobwire.errors import ProblemError, Unavailable
from jobwire.models import Execution

T = TypeVar("T")


@dataclass(frozen=True)
class Call(Generic[T]):
    """One API request and how to read its answer. `repeatable`: sending it twice does nothing
    twice (GET, PUT, DELETE, an enqueue with an idempotency key), so it may be sent again after a
    reply was lost."""

    method: str
    path: str
    decode: Callable[[Any], T]
    params: Mapping[str, Any] | None = None
    body: Any = None
    headers: Mapping[str, str] = field(default_factory=dict)
    repeatable: bool = False

    def request_args(self) -> dict[str, Any]:
        """Keyword arguments of httpx's `Client.request` / `AsyncClient.request`."""
        headers = dict(self.headers)
        content = None
        if self.body is not None:
            content = dumps(self.body).encode()
            headers["content-type"] = "application/json"
        params = {k: v for k, v in (self.params or {}).items() if v is not None}
        return {"method": self.method, "url": self.path, "params": params, "content": content, "headers": headers}


@dataclass(frozen=True)
class Send:
    call: Call[Any]


@dataclass(frozen=True)
class Sleep:
    seconds: float


Program = Generator[Send | Sleep, Any, T]


def path(*parts: object) -> str:
    """`/v1/…` with each variable part escaped (a name can never reach another route)."""
    return "/v1/" + "/".join(quote(str(p), safe="") for p in parts)


def exchange(call: Call[T], retries: Retries) -> Program[T]:
    """Send `call`, again while the policy allows, and decode the answer."""
    attempt = 0
    while True:
        reply = yield Send(call)
        if isinstance(reply, httpx.Response) and reply.status_code != 503:
            return decode(call, reply)
        if isinstance(reply, httpx.UnsupportedProtocol):  # a base URL without http(s)://: a mistake, not an outage
            raise reply
        delay = retries.delay(attempt, reply, call.repeatable)
        if delay is None:
            raise unavailable(reply, attempt + 1)
        yield Sleep(delay)
        attempt += 1


def decode(call: Call[T], response: httpx.Response) -> T:
    if response.status_code >= 400:
        raise problem(response)
    if response.status_code == 204 or not response.content:
        return call.decode(None)
    return call.decode(response.json())


def problem(response: httpx.Response, error: type[ProblemError] = ProblemError) -> ProblemError:
    """The refusal in `response` (RFC 9457 problem+json, or whatever a proxy answered instead)."""
    try:
        body: Any = response.json()
    except ValueError:
        body = response.text
    if isinstance(body, dict):
        return error(body.get("status", response.status_code), body.get("title") or response.reason_phrase,
                     body.get("detail"), errors=body.get("errors"), body=body, type=body.get("type"))
    return error(response.status_code, response.reason_phrase, body or None, body=body)


def unavailable(reply: httpx.Response | Exception, tries: int) -> Unavailable:
    if isinstance(reply, httpx.Response):
        return problem(reply, Unavailable)  # type: ignore[return-value]
    error = Unavailable(None, "Jobwire unreachable",
                        f"{type(reply).__name__}: {reply} ({tries} {'try' if tries == 1 else 'tries'})")
    error.__cause__ = reply
    return error


# --- decoders ------------------------------------------------------------------------------

def as_is(body: Any) -> Any:
    return body


def items(body: Any) -> list[Any]:
    return list(body["items"])


def executions(body: Any) -> list[Execution]:
    return [Execution.from_json(item) for item in body["items"]]


@dataclass(frozen=True)
class Page(Generic[T]):
    items: list[T]
    next: Call[Page[T]] | None  # the call for the following page; None on the last


def paged(call: Call[Page[T]], item: Callable[[Any], T]) -> Call[Page[T]]:
    """`call` decoding `{items, next_cursor}` into a Page whose `next` asks for the next cursor."""

    def page(body: Any) -> Page[T]:
        cursor = body.get("next_cursor")
        following = None if cursor is None else replace(paged_call, params={**(call.params or {}), "cursor": cursor})
        return Page([item(x) for x in body["items"]], following)

    paged_call = replace(call, decode=page)
    return paged_call


# --- wait ----------------------------------------------------------------------------------

def wait(call: Call[Execution], timeout: float, retries: Retries, *, first_delay: float = 0.05,
         max_delay: float = 1.0, clock: Callable[[], float] = time.monotonic) -> Program[Execution]:
    """Read the execution until it is terminal: polls 50 ms apart at first, doubling up to 1 s;
    TimeoutError once `timeout` seconds have passed."""
    deadline = clock() + timeout
    delay = first_delay
    while True:
        execution = yield from exchange(call, retries)
        if execution.is_terminal:
            return execution
        left = deadline - clock()
        if left <= 0:
            raise TimeoutError(f"execution {execution.id} is still {execution.state} after {timeout} s")
        yield Sleep(min(delay, left))
        delay = min(delay * 2, max_delay)


# --- what both drivers share ---------------------------------------------------------------

@dataclass(frozen=True)
class Done(Generic[T]):
    value: T


def start(work: Call[T] | Program[T], retries: Retries) -> Program[T]:
    """A program for `work`: a Call becomes its exchange."""
    return exchange(work, retries) if isinstance(work, Call) else work


def advance(program: Program[T], reply: Any) -> Send | Sleep | Done[T]:
    """The program's next step after `reply` (None to begin, and after a Sleep)."""
    try:
        return program.send(reply)
    except StopIteration as stop:
        return Done(stop.value)
