"""The callbacks of one attempt (README "Callbacks at a glance"), over httpx, with the
attempt's callback token. Each method maps Jobwire's answer to what the context needs."""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any
from urllib.parse import quote

import httpx

from jobwire.handler._errors import CallbackError

log = logging.getLogger("jobwire.handler")

# A completion is the attempt's outcome: worth retrying through a short outage of Jobwire
# (any node answers callbacks) before the deadline turns it into an abandoned attempt.
COMPLETE_RETRY_DELAYS = (0.2, 0.5, 1.0, 2.0, 4.0, 8.0)


def encode(document: Any) -> bytes:
    """JSON as Jobwire reads it: no NaN or Infinity (a TypeError or ValueError otherwise)."""
    return json.dumps(document, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode()


class Callbacks:
    def __init__(self, client: httpx.AsyncClient, url: str, token: str) -> None:
        self._client = client
        self._url = url
        self._headers = {"authorization": f"Bearer {token}", "content-type": "application/json"}

    async def _call(self, method: str, path: str, body: Any = None, *, content: bytes | None = None) -> httpx.Response:
        if content is None and body is not None:
            content = encode(body)
        try:
            return await self._client.request(method, self._url + path, content=content, headers=self._headers)
        except httpx.HTTPError as exc:
            raise CallbackError(f"{method} {path or '/'}: {type(exc).__name__}: {exc}") from exc

    async def report(self, snapshot: dict[str, Any] | None) -> bool:
        """A progress snapshot (None: a heartbeat); both move the deadline. Returns whether the
        handler should stop: `cancel_requested`, or 409 (a newer attempt owns the execution)."""
        response = await self._call("POST", "/progress" if snapshot else "/heartbeat", snapshot)
        if response.status_code == 409:
            return True
        _expect(response, 200)
        return bool(_answer(response).get("cancel_requested"))

    async def append_logs(self, entries: list[dict[str, Any]]) -> None:
        _expect(await self._call("POST", "/logs", {"entries": entries}), 200)

    async def get_step(self, name: str) -> tuple[bool, Any]:
        """(True, its result) when the step was recorded; (False, None) until then."""
        response = await self._call("GET", f"/steps/{quote(name, safe='')}")
        if response.status_code == 404:
            return False, None
        _expect(response, 200)
        return True, _answer(response).get("result")

    async def put_step(self, name: str, result: Any) -> Any:
        """The step's stored result: this one (201), or the first one recorded (200)."""
        response = await self._call("PUT", f"/steps/{quote(name, safe='')}", {"result": result})
        _expect(response, 200, 201)
        return _answer(response).get("result")

    async def complete(self, body: bytes) -> None:
        """POST …/complete, retried through no answer, 429 and 5xx. Never raises: an outcome
        that cannot be delivered is logged, and Jobwire retries the attempt at its deadline."""
        for delay in (*COMPLETE_RETRY_DELAYS, None):
            try:
                response = await self._call("POST", "/complete", content=body)
            except CallbackError as exc:
                problem = str(exc)
            else:
                if response.status_code == 200:
                    return
                if response.status_code != 429 and response.status_code < 500:
                    # 409: a newer attempt owns the execution; 403/422: retrying changes nothing.
                    log.warning("completion of %s refused: HTTP %s %s", self._url, response.status_code,
                                response.text[:500])
                    return
                problem = f"HTTP {response.status_code}"
            if delay is None:
                log.error("completion of %s not delivered (%s): Jobwire retries the attempt at its deadline",
                          self._url, problem)
                return
            await asyncio.sleep(delay)


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
