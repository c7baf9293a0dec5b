"""Every route and every dependency runs on the event loop: FastAPI runs a plain-def endpoint or
dependency on a worker thread, and that hop (a thread switch and the GIL handed over twice)
cost more than the rest of a callback request under load."""

from __future__ import annotations

import inspect
from collections.abc import Iterator
from typing import Any

from fastapi.dependencies.models import Dependant
from fastapi.routing import APIRoute

from app.api.app import create_api


def _runs_on_loop(call: Any) -> bool:
    dunder_call = type(call).__call__ if not inspect.isroutine(call) else None
    return inspect.iscoroutinefunction(call) or inspect.iscoroutinefunction(dunder_call)


def _calls(dependant: Dependant) -> Iterator[Any]:
    for sub in dependant.dependencies:
        yield sub.call
        yield from _calls(sub)


def _api_routes(routes: list[Any], inherited: tuple[Any, ...] = ()) -> Iterator[tuple[APIRoute, tuple[Any, ...]]]:
    """Every APIRoute with the dependencies of the routers it is included through."""
    for route in routes:
        if isinstance(route, APIRoute):
            yield route, inherited
        router = getattr(route, "original_router", None) or getattr(route, "router", None)
        if router is not None and router is not route:
            context = getattr(route, "include_context", None)
            extra = [*getattr(router, "dependencies", []), *getattr(context, "dependencies", [])]
            yield from _api_routes(router.routes, (*inherited, *(d.dependency for d in extra)))


def test_every_endpoint_and_dependency_is_a_coroutine():
    routes = list(_api_routes(create_api(max_request_bytes=1).routes))
    assert len(routes) > 25
    threaded = sorted({f"{route.path}: {getattr(call, '__qualname__', call)!r}"
                       for route, inherited in routes
                       for call in (route.endpoint, *inherited, *_calls(route.dependant))
                       if not _runs_on_loop(call)})
    assert threaded == []
