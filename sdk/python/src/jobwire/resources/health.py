"""`client.health()`, `client.readiness()` and `client.metrics()`: the routes that take no key."""

from __future__ import annotations

from jobwire._protocol import Call
from jobwire.models import Health, Readiness


def health() -> Call[Health]:
    return Call("health", "GET", "/healthz", Health.from_json)


def readiness() -> Call[Readiness]:
    # A node that is not ready answers 503 with a problem saying why: an answer, not an outage.
    return Call("readiness", "GET", "/readyz", Readiness.from_answer, answers=frozenset({503}))


def metrics() -> Call[str]:
    return Call("metrics", "GET", "/metrics", str, text=True)
