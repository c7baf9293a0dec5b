"""The client's protocol, written once for both clients and free of I/O.

Every client call is a *program*: a generator that yields steps (`Send` a request, `Sleep` a
while) and gets back what the step produced (an httpx.Response, or the transport exception that
replaced it). `JobwireClient` runs programs with httpx.Client and time.sleep, `AsyncJobwireClient`
with httpx.AsyncClient and asyncio.sleep; the requests, the retries, the decoding of answers and
refusals and the polling of `wait` are here, the same for both (the sans-I/O style of h11 and
httpcore). A `Call` is one request and how to read its answer; a `Plan` is a program of several
(`wait`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Generator, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Generic, TypeVar
from urllib.parse import quote

import httpx

from jobwire._json import dumps, loads
from jobwire._resend import Resend, rule_for
from jobwire._retry import Retries
from jobwire.errors import InvalidResponse, ProblemError, Unavailable
from jobwire.models import Execution, Page

T = TypeVar("T")
P = TypeVar("P", bound=ProblemError)

# Failures before a byte of the request left: nothing can have happened on the server.
NOT_SENT = (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout)
# The caller's mistake, not an outage: trying again cannot help.
MISTAKES = (httpx.UnsupportedProtocol, httpx.LocalProtocolError)
PROBLEM_JSON = "application/problem+json"


@dataclass(frozen=True, slots=True)
class Call(Generic[T]):
    """One API request and how to read its answer. `operation` is its operationId in the OpenAPI
    document, the key of its row in `_resend.RESEND`; `name` the path's variable part as the
    caller gave it (for messages). `answers`: statuses that are an answer rather than a refusal
    (`/readyz`'s 503); `text`: the answer is text, not JSON; `cursor_param`: the query parameter
    a listing's next page is asked with (`cursor`, or `after` where the API names it so);
    `stream`: the answer is a stream (server-sent events), decoded from the httpx.Response still
    open, its body unread (a refusal's body is read, and the response closed, by the driver)."""

    operation: str
    method: str
    path: str
    decode: Callable[[Any], T]
    params: Mapping[str, Any] | None = None
    body: Any = None
    headers: Mapping[str, str] = field(default_factory=dict)
    name: str = ""
    answers: frozenset[int] = frozenset()
    text: bool = False
    cursor_param: str = "cursor"
    stream: bool = False

    def request_args(self) -> dict[str, Any]:
        """Keyword arguments of httpx's `Client.request` / `AsyncClient.request`."""
        headers = dict(self.headers)
        content = None
        if self.body is not None:
            content = dumps(self.body).encode()
            headers["content-type"] = "application/json"
        params = {k: _param(v) for k, v in (self.params or {}).items() if v is not None}
        return {"method": self.method, "url": self.path, "params": params, "content": content, "headers": headers}

    @property
    def resend(self) -> Resend:
        return rule_for(self.operation, self.body)


def _param(value: Any) -> Any:
    return value if isinstance(value, (bool, int, float)) else str(value)  # httpx writes True as `true`


@dataclass(frozen=True, slots=True)
class Send:
    call: Call[Any]


@dataclass(frozen=True, slots=True)
class Sleep:
    seconds: float


Program = Generator[Send | Sleep, Any, T]


@dataclass(frozen=True, slots=True)
class Plan(Generic[T]):
    """A program of several calls, built once the client's retry policy is known."""

    steps: Callable[[Retries], Program[T]]


Work = Call[T] | Plan[T]


def path(*parts: object) -> str:
    """`/v1/…` with each variable part escaped (a name can never reach another route)."""
    return "/v1/" + "/".join(quote(str(p), safe="") for p in parts)


# --- one request ---------------------------------------------------------------------------

def exchange(call: Call[T], retries: Retries) -> Program[T]:
    """Send `call`, again while the policy and `_resend` allow, and decode the answer."""
    attempt = 0
    lost = False  # an earlier try's reply may have been lost: that try may have been applied
    while True:
        reply = yield Send(call)
        if isinstance(reply, httpx.Response):
            if reply.status_code != 503 or reply.status_code in call.answers:
                if lost and reply.status_code == 404 and call.resend.gone_is_done:
                    return call.decode(None)  # the lost try deleted it
                return decode(call, reply)
            proves_nothing_done = reply.headers.get("content-type", "").startswith(PROBLEM_JSON)
        else:
            if isinstance(reply, MISTAKES):
                raise reply
            proves_nothing_done = isinstance(reply, NOT_SENT)
        if not proves_nothing_done:
            if not call.resend.safe:
                raise outcome_unknown(call, reply)
            lost = True
        delay = retries.delay(attempt, reply)
        if delay is None:
            raise unavailable(call, reply, attempt + 1, lost)
        yield Sleep(delay)
        attempt += 1


def decode(call: Call[T], response: httpx.Response) -> T:
    if response.status_code >= 400 and response.status_code not in call.answers:
        raise problem(response, ProblemError)
    if call.stream:
        if response.status_code != 200:  # not a stream: what answered is not Jobwire's stream
            raise problem(response, ProblemError)
        return call.decode(response)
    try:
        if call.text:
            return call.decode(response.text)
        if response.status_code == 204 or not response.content:
            return call.decode(None)
        return call.decode(loads(response.content))
    except (KeyError, TypeError, ValueError) as exc:
        kind = response.headers.get("content-type")
        raise InvalidResponse(
            f"{call.method} {call.path}: the {response.status_code} answer is not Jobwire's "
            f"({kind or 'no content type'}: {type(exc).__name__}: {exc}); is the base URL Jobwire's?",
            status=response.status_code, content_type=kind, body=response.text) from exc


def problem(response: httpx.Response, error: type[P]) -> P:
    """The refusal in `response`: an RFC 9457 problem, or whatever a proxy answered instead (its
    text as `detail` when it is plain text, short; a page of HTML is no detail)."""
    body: Any
    try:
        body = loads(response.content)
    except ValueError:
        body = response.text
    if isinstance(body, dict) and "title" in body:
        status = body.get("status")
        return error(status if isinstance(status, int) else response.status_code,
                     str(body.get("title") or response.reason_phrase), body.get("detail"),
                     errors=body.get("errors") if isinstance(body.get("errors"), list) else None,
                     body=body, type=body.get("type"))
    kind = response.headers.get("content-type", "")
    text = " ".join(response.text.split())
    detail = (text[:200] + ("…" if len(text) > 200 else "")) if kind.startswith("text/plain") and text else None
    return error(response.status_code, response.reason_phrase or "Error", detail, body=body)


def unavailable(call: Call[Any], reply: httpx.Response | Exception, tries: int, lost: bool) -> Unavailable:
    """The tries are spent: Jobwire's last 503, or the last transport failure."""
    if isinstance(reply, httpx.Response):
        return problem(reply, Unavailable)
    tried = f"{tries} {'try' if tries == 1 else 'tries'}"
    detail = f"{type(reply).__name__}: {_said(reply)} ({tried})"
    if lost:
        detail += f"; a reply was lost, and {call.method} {call.path} is safe to send again"
    error = Unavailable(None, "Jobwire unreachable", detail)
    error.__cause__ = reply
    return error


def outcome_unknown(call: Call[Any], reply: httpx.Response | Exception) -> Unavailable:
    """The reply to a request that must not be sent twice may have been lost."""
    rule = call.resend
    if isinstance(reply, httpx.Response):
        what = f"{reply.status_code} came from something other than Jobwire (not a problem document)"
    else:
        what = f"the connection failed after the request was sent ({type(reply).__name__}: {_said(reply)})"
    fill = {"path": call.path, "name": call.name}
    error = Unavailable(
        None, "Outcome unknown",
        f"{call.method} {call.path}: {what}, so Jobwire may or may not have applied it. It is not sent again: "
        f"{rule.reason.format(**fill)}. {rule.advice.format(**fill)}.",
        maybe_applied=True)
    if isinstance(reply, Exception):
        error.__cause__ = reply
    return error


def _said(exc: Exception) -> str:
    return " ".join(str(exc).split()) or "no message"


# --- decoders ------------------------------------------------------------------------------

def nothing(body: Any) -> None:
    """A 204's decoder."""
    return None


def listed(item: Callable[[Any], T]) -> Callable[[Any], list[T]]:
    """A decoder of `{items: [...]}`."""
    return lambda body: [item(x) for x in body["items"]]


def paged(item: Callable[[Any], T]) -> Callable[[Any], Page[T]]:
    """A decoder of `{items, next_cursor}`."""
    return lambda body: Page([item(x) for x in body["items"]], body.get("next_cursor"), dict(body))


def following(call: Call[Page[T]], page: Page[T]) -> Call[Page[T]] | None:
    """The call for the page after `page`, or None after the last."""
    if page.next_cursor is None:
        return None
    return replace(call, params={**(call.params or {}), call.cursor_param: page.next_cursor})


# --- wait ----------------------------------------------------------------------------------

def poll(call: Call[T], timeout: float, finished: Callable[[T], bool], still: Callable[[T], str], *,
         first_delay: float = 0.05, max_delay: float = 1.0,
         clock: Callable[[], float] = time.monotonic) -> Plan[T]:
    """Read with `call` until `finished` says so: polls 50 ms apart at first, doubling up to 1 s;
    TimeoutError (`still` says what it was last) once `timeout` seconds have passed."""

    def steps(retries: Retries) -> Program[T]:
        deadline = clock() + timeout
        delay = first_delay
        while True:
            read = yield from exchange(call, retries)
            if finished(read):
                return read
            left = deadline - clock()
            if left <= 0:
                raise TimeoutError(f"{still(read)} after {timeout} s")
            yield Sleep(min(delay, left))
            delay = min(delay * 2, max_delay)

    return Plan(steps)


def wait(call: Call[Execution], timeout: float, *, first_delay: float = 0.05, max_delay: float = 1.0,
         clock: Callable[[], float] = time.monotonic) -> Plan[Execution]:
    """Read the execution until it is terminal: polls 50 ms apart at first, doubling up to 1 s;
    TimeoutError once `timeout` seconds have passed."""
    return poll(call, timeout, lambda execution: execution.is_terminal,
                lambda execution: f"execution {execution.id} is still {execution.state}",
                first_delay=first_delay, max_delay=max_delay, clock=clock)


# --- a pause -------------------------------------------------------------------------------

def pause(seconds: float) -> Plan[None]:
    """A program that only waits `seconds` (a feed's poll between two asks): time.sleep on the
    blocking client, asyncio.sleep on the asyncio one."""

    def steps(retries: Retries) -> Program[None]:
        yield Sleep(seconds)

    return Plan(steps)


# --- what both drivers share ---------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class Done(Generic[T]):
    value: T


def start(work: Work[T], retries: Retries) -> Program[T]:
    """A program for `work`: a Call becomes its exchange."""
    return exchange(work, retries) if isinstance(work, Call) else work.steps(retries)


def advance(program: Program[T], reply: Any) -> Send | Sleep | Done[T]:
    """The program's next step after `reply` (None to begin, and after a Sleep)."""
    try:
        return program.send(reply)
    except StopIteration as stop:
        return Done(stop.value)
