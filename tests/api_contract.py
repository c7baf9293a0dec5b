"""The response contract: every 2xx JSON body a Jobwire server sends a test matches the response
model its route declares, the model the OpenAPI document shows.

Routes write their views with orjson (app/api/responses.py), not through their models: pydantic's
validation and serialization cost measurably on a 1,000-item batch answer, and cannot write the
orjson fragments that carry integers past 64 bits. So the check is here, on what the suite
receives: tests/conftest.py registers each server it starts (`register`), and its autouse fixture
wraps httpx.AsyncClient.send for the test (`checking`). A 2xx JSON answer from a registered server
is matched to its FastAPI route (path and method, as Starlette routes it) and validated strictly
against the model declared for that status: no missing field, no extra one (response models
forbid extras), no coerced type, every time in UTC. A violation raises ContractViolation at the
request and fails the test at teardown too (in case the test swallowed the exception).

Not checked: 204s, non-JSON bodies (/metrics), routes that are not API routes (/openapi.json,
/docs), HEAD requests and streamed responses. An API route that answers JSON without a declared
model, or with a 2xx status it does not declare, is a violation.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

import httpx
import orjson
from fastapi import FastAPI
from fastapi.routing import APIRoute, RouteContext, iter_route_contexts
from pydantic import BaseModel, TypeAdapter, ValidationError
from starlette.routing import Match

from app.domain.jsontext import loads

Origin = tuple[str, str, int]


class ContractViolation(AssertionError):
    """A 2xx body that does not match its route's declared response model."""


@dataclass
class ResponseContract:
    servers: dict[Origin, tuple[FastAPI, Callable[[], bool]]] = field(default_factory=dict)

    def register(self, url: str, app: FastAPI, live: Callable[[], bool] = lambda: True) -> None:
        """Checks answers from `url` against `app`'s routes while `live()` (a stopped server's
        port may serve something else later)."""
        self.servers[_origin(httpx.URL(url))] = (app, live)

    def violation(self, response: httpx.Response) -> str | None:
        """What is wrong with this response, None when nothing is (or it is not checked)."""
        request = response.request
        found = self.servers.get(_origin(request.url))
        if found is None or not found[1]():
            return None
        return violation(found[0], request.method, request.url.path, response.status_code,
                         response.headers.get("content-type"), response.content)


CONTRACT = ResponseContract()
register = CONTRACT.register


@contextmanager
def checking(contract: ResponseContract = CONTRACT) -> Iterator[list[str]]:
    """While inside, every httpx.AsyncClient response is checked; yields the violations seen."""
    seen: list[str] = []
    original = httpx.AsyncClient.send

    @functools.wraps(original)
    async def send(client: httpx.AsyncClient, request: httpx.Request, **kwargs: Any) -> httpx.Response:
        response = await original(client, request, **kwargs)
        if not kwargs.get("stream", False):
            found = contract.violation(response)
            if found is not None:
                seen.append(found)
                raise ContractViolation(found)
        return response

    httpx.AsyncClient.send = send  # type: ignore[method-assign]
    try:
        yield seen
    finally:
        httpx.AsyncClient.send = original  # type: ignore[method-assign]


def violation(app: FastAPI, method: str, path: str, status: int, content_type: str | None,
              body: bytes) -> str | None:
    """The contract for one answer of `app`: None when it holds or does not apply."""
    if not 200 <= status < 300 or status == 204 or method == "HEAD" or not _is_json(content_type):
        return None
    route = route_for(app, method, path)
    if route is None:
        return None
    where = f"{method} {path} ({route.path}) answered {status}"
    declared = declared_statuses(route)
    if status not in declared:
        return f"{where}, a 2xx status the route does not declare (it declares {sorted(declared)})"
    model = declared[status]
    if model is None:
        return f"{where} with a JSON body, but the route declares no response model for it"
    try:
        value = _adapter(model).validate_json(_without_huge_integers(body), strict=True)
    except ValidationError as exc:
        return f"{where} with a body that is not a {_name(model)}: {exc}\nbody: {body[:2000]!r}"
    for location, time in _datetimes(value, ()):
        if time.utcoffset() != timedelta(0):
            return f"{where}: {'.'.join(map(str, location))} = {time.isoformat()} is not a UTC time"
    return None


def api_routes(app: FastAPI) -> list[RouteContext]:
    """Every API route as the application serves it: path, tags, responses and dependencies
    combined with those of the routers it is included through (`.original_route` is the
    APIRoute, of its route class)."""
    return [c for c in iter_route_contexts(app.routes) if isinstance(c.original_route, APIRoute)]


def route_for(app: FastAPI, method: str, path: str) -> RouteContext | None:
    """The API route a request goes to, first match first as routing does; None for another
    kind of route (/openapi.json, /docs) or none."""
    scope = {"type": "http", "method": method, "path": path, "root_path": "", "headers": []}
    for context in iter_route_contexts(app.routes):
        match, _ = context.matches(scope)
        if match is Match.FULL:
            return context if isinstance(context.original_route, APIRoute) else None
    return None


def declared_statuses(route: APIRoute | RouteContext) -> dict[int, Any]:
    """The 2xx statuses the route's OpenAPI operation declares, each with its model (or None)."""
    declared: dict[int, Any] = {route.status_code or 200: route.response_model}
    for code, spec in route.responses.items():
        if str(code).isdigit() and 200 <= int(code) < 300:
            declared.setdefault(int(code), spec.get("model"))
    return declared


def _origin(url: httpx.URL) -> Origin:
    return url.scheme, url.host, url.port or (443 if url.scheme == "https" else 80)


def _is_json(content_type: str | None) -> bool:
    media = (content_type or "").partition(";")[0].strip().lower()
    return media == "application/json" or media.endswith("+json")


@functools.cache
def _adapter(model: Any) -> TypeAdapter[Any]:
    return TypeAdapter(model)


def _name(model: Any) -> str:
    return getattr(model, "__name__", repr(model))


def _without_huge_integers(body: bytes) -> bytes:
    """pydantic's JSON parser refuses integers of more than 4300 digits, which Jobwire stores
    and shows (app/domain/jsontext.py): such an integer becomes 2**63, still an integer."""
    if len(body) < 4300:
        return body
    document = loads(body)
    replaced = _replace_fragments(document)
    return body if replaced is document else orjson.dumps(replaced)


def _replace_fragments(value: Any) -> Any:
    if isinstance(value, orjson.Fragment):
        return 2**63
    if isinstance(value, dict):
        items = {k: _replace_fragments(v) for k, v in value.items()}
        return value if all(items[k] is value[k] for k in value) else items
    if isinstance(value, list):
        children = [_replace_fragments(v) for v in value]
        return value if all(a is b for a, b in zip(children, value, strict=True)) else children
    return value


def _datetimes(value: Any, location: tuple[str | int, ...]) -> Iterator[tuple[tuple[str | int, ...], datetime]]:
    """Every datetime in a validated model, with where it is (Any fields hold plain JSON: no times)."""
    if isinstance(value, datetime):
        yield location, value
    elif isinstance(value, BaseModel):
        for name in type(value).model_fields:
            yield from _datetimes(getattr(value, name), (*location, name))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _datetimes(item, (*location, index))
