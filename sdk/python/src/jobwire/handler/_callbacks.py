"""The callbacks of one attempt (docs/reference/protocol.md), over httpx, with the
attempt's callback token. Each method maps Jobwire's answer to what the context needs.

Every callback rides out a short outage of Jobwire (a restart, a database failover: any node
answers callbacks) by trying again until the attempt's deadline (_retrying.py), one WARNING
line per retry and one ERROR line when it gives up. Sending one again is safe: a completion,
a progress snapshot, a heartbeat and a step are idempotent; a log batch whose answer was lost
may be stored twice."""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any
from urllib.parse import quote

import httpx

from jobwire._json import dumps
from jobwire._retry import parse_retry_after
from jobwire.handler._errors import CallbackError
from jobwire.handler._retrying import RETRIED_STATUSES, AttemptDeadline, Backoff

log = logging.getLogger("jobwire.handler")

STALE = 409  # a newer attempt owns the execution (or the attempt is over): nothing of ours applies
PAGE = 1000  # parents (or children) asked for at once (the most the callback gives)


def encode(document: Any) -> bytes:
    """JSON as Jobwire reads it, by the SDK's one encoder: no NaN or Infinity (a TypeError or
    ValueError otherwise)."""
    return dumps(document).encode()


class Callbacks:
    def __init__(self, client: httpx.AsyncClient, execution_id: str, url: str, token: str, deadline: AttemptDeadline,
                 backoff: Backoff | None = None) -> None:
        self._client = client
        self._execution_id = execution_id
        self._url = url
        self._headers = {"authorization": f"Bearer {token}", "content-type": "application/json"}
        self.deadline = deadline
        self._backoff = backoff or Backoff()

    async def _call(self, method: str, path: str, body: Any = None, *, content: bytes | None = None,
                    retry: bool = True) -> tuple[httpx.Response, float]:
        """Jobwire's answer and when the try that got it was sent (monotonic). No answer, 429,
        502, 503 and 504 are tried again until the deadline (retry=False: not at all), then
        raise CallbackError (with gave_up, once logged, when it was); any other answer is
        returned."""
        if content is None and body is not None:
            content = encode(body)
        name = f"{method} {path or '/'}"
        retries = 0
        while True:
            sent_at = time.monotonic()
            status: int | None = None
            retry_after: float | None = None
            try:
                response = await self._client.request(method, self._url + path, content=content,
                                                      headers=self._headers)
            except httpx.HTTPError as exc:
                problem = f"{type(exc).__name__}: {exc}".removesuffix(": ")
            else:
                if response.status_code not in RETRIED_STATUSES:
                    return response, sent_at
                status = response.status_code
                problem = f"HTTP {status}"
                retry_after = parse_retry_after(response.headers.get("retry-after"))
            if not retry:
                raise CallbackError(f"{name}: {problem}", status)
            left = self.deadline.left(time.monotonic())
            if left <= 0:
                log.error("execution %s: %s not delivered (%s) after %d tries: the attempt's deadline has passed",
                          self._execution_id, name, problem, retries + 1)
                raise CallbackError(f"{name}: {problem}, until the attempt's deadline", status, gave_up=True)
            delay = self._backoff.delay(retries, retry_after, left)
            log.warning("execution %s: %s failed (%s); trying again in %.1f s", self._execution_id, name, problem,
                        delay)
            await asyncio.sleep(delay)
            retries += 1

    async def report(self, snapshot: dict[str, Any] | None, *, retry: bool = True) -> bool:
        """A progress snapshot (None: a heartbeat); both move the deadline. Returns whether the
        handler should stop: `cancel_requested`, or 409 (a newer attempt owns the execution)."""
        response, sent_at = await self._call("POST", "/progress" if snapshot else "/heartbeat", snapshot,
                                             retry=retry)
        if response.status_code == STALE:
            return True
        _expect(response, 200)
        self.deadline.moved(sent_at)
        return bool(_answer(response).get("cancel_requested"))

    async def append_logs(self, entries: list[dict[str, Any]]) -> None:
        """Stores a batch; a batch for an attempt that is no longer current is dropped quietly."""
        response, _ = await self._call("POST", "/logs", {"entries": entries})
        if response.status_code != STALE:
            _expect(response, 200)

    async def get_step(self, name: str) -> tuple[bool, Any]:
        """(True, its result) when the step was recorded; (False, None) until then."""
        response, _ = await self._call("GET", f"/steps/{quote(name, safe='')}")
        if response.status_code == 404:
            return False, None
        _expect(response, 200)
        return True, _answer(response).get("result")

    async def put_step(self, name: str, result: Any) -> Any:
        """The step's stored result: this one (201), or the first one recorded (200)."""
        response, _ = await self._call("PUT", f"/steps/{quote(name, safe='')}", {"result": result})
        _expect(response, 200, 201)
        return _answer(response).get("result")

    async def page(self, kind: str, after: str) -> tuple[list[dict[str, Any]], str | None]:
        """A page of the execution's workflow `parents` (or the `children` it spawned) by ref with
        their results, and the next page's `after` (None at the end)."""
        query = f"?limit={PAGE}" + (f"&after={quote(after, safe='')}" if after else "")
        response, _ = await self._call("GET", f"/{kind}{query}")
        _expect(response, 200)
        answer = _answer(response)
        items = answer.get("items")
        if not isinstance(items, list) or not all(isinstance(item, dict) for item in items):
            raise CallbackError(f"{response.request.url.path}: the answer has no list of {kind}", 200)
        following = answer.get("next_after")
        return items, following if isinstance(following, str) and following else None

    async def spawn(self, jobs: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """POST …/children: the children's items {ref, execution_id, state}, in the order asked
        (201 made, or 200: every ref spawned before, so asking again after an outage is safe)."""
        response, _ = await self._call("POST", "/children", {"jobs": jobs})
        _expect(response, 200, 201)
        items = _answer(response).get("items")
        if not isinstance(items, list) or not all(isinstance(item, dict) for item in items):
            raise CallbackError(f"{response.request.url.path}: the answer has no list of children",
                                response.status_code)
        return items

    async def complete(self, body: bytes) -> None:
        """POST …/complete. Never raises: an outcome that cannot be delivered is logged, and
        Jobwire abandons the attempt at its deadline (and retries it while attempts remain)."""
        try:
            response, _ = await self._call("POST", "/complete", content=body)
        except CallbackError:  # gave up at the deadline, and said so
            return
        if response.status_code == STALE:
            log.info("execution %s: completion not applied: the attempt is no longer current", self._execution_id)
        elif response.status_code != 200:
            # 403/404/422: sending it again changes nothing.
            log.warning("execution %s: completion refused: HTTP %s %s", self._execution_id, response.status_code,
                        response.text[:500])


def _expect(response: httpx.Response, *statuses: int) -> None:
    if response.status_code not in statuses:
        raise CallbackError(f"{response.request.method} {response.request.url.path}: HTTP {response.status_code} "
                            f"{response.text[:500]}", response.status_code)


def _answer(response: httpx.Response) -> dict[str, Any]:
    try:
        document = response.json()
    except ValueError as exc:
        raise CallbackError(f"{response.request.url.path}: the answer is not JSON", response.status_code) from exc
    if not isinstance(document, dict):
        raise CallbackError(f"{response.request.url.path}: the answer is not a JSON object", response.status_code)
    return document
