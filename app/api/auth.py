"""API keys and scopes for management routes.

Every management route declares the scope it needs where it is declared, with @requires(Scope.X)
under its route decorator; ManagementRoute, the route class of every management route, checks it
before the body is read, on FastAPI's path and the direct routes' alike, and the OpenAPI document
shows it (x-jobwire-scope, app/api/app.py). A route that declares none needs `admin`: a route is
never left open by mistake (tests/api/test_scoped_keys.py also checks that each declares one), and
@requires written above the route decorator, too late to be read, fails at import.

A request's key is one of:
- a bootstrap key (JOBWIRE_API_KEYS), compared in constant time: every scope, every queue;
- a database key (`jw_…`, app/services/api_keys.py): its scopes and queues;
- none at all while the API is open: no bootstrap key is configured and no database key exists.
Missing or unknown → 401 (WWW-Authenticate: Bearer); a key without the scope → 403 naming it. The
principal (scopes, queues) is left on `request.state.principal` for the route.
"""

from __future__ import annotations

import hmac
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from starlette.requests import Request

from app.api.body import StrictJSONRoute
from app.domain.access import FULL_ACCESS, Principal, Scope
from app.domain.errors import Forbidden, Unauthenticated
from app.services.api_keys import ApiKeyService

E = TypeVar("E", bound=Callable[..., object])
_SCOPE_ATTRIBUTE = "_jobwire_scope"
_ROUTED_ATTRIBUTE = "_jobwire_routed"  # set on an endpoint once a ManagementRoute has read its scope
UNDECLARED_SCOPE = Scope.ADMIN  # what a management route that declares no scope needs


def requires(scope: Scope) -> Callable[[E], E]:
    """Declares the scope a management route's endpoint needs; put it under the route decorator
    (`@router.get(...)` then `@requires(Scope.READ)`), which reads it as it creates the route."""

    def declare(endpoint: E) -> E:
        if getattr(endpoint, _ROUTED_ATTRIBUTE, False):
            raise TypeError(f"@requires({scope}) on {getattr(endpoint, '__qualname__', endpoint)} comes too late: the "
                            "route was created without it; put it under the route decorator")
        setattr(endpoint, _SCOPE_ATTRIBUTE, scope)
        return endpoint

    return declare


def declared_scope(endpoint: Callable[..., object]) -> Scope | None:
    """The scope @requires declared on `endpoint`, None when it declares none."""
    return getattr(endpoint, _SCOPE_ATTRIBUTE, None)


def bearer_token(request: Request) -> str | None:
    return bearer_from(request.headers.get("authorization"))


def bearer_from(header: str | None) -> str | None:
    """The token of an `Authorization: Bearer <token>` header value."""
    if not header:
        return None
    scheme, _, token = header.partition(" ")
    return token.strip() if scheme.lower() == "bearer" and token.strip() else None


def is_bootstrap_key(keys: tuple[bytes, ...], token: str) -> bool:
    """`token` is one of the bootstrap keys, compared in constant time."""
    # surrogatepass: a str that is no header value (a lone surrogate) is a wrong key, not a crash.
    given = token.encode("utf-8", "surrogatepass")
    return any(hmac.compare_digest(given, key) for key in keys)


def key_service(request: Request) -> ApiKeyService:
    """The node's API key service (set by the composition root)."""
    return request.app.state.api_key_service


async def authorize(request: Request, scope: Scope) -> Principal:
    """The check of every management route (ManagementRoute), before its body is
    read: the request's principal, which grants `scope`, also left on request.state.principal.
    Unauthenticated for a missing or unknown key, Forbidden for a key without the scope."""
    principal = await authenticate(request)
    principal.require(scope)
    request.state.principal = principal
    return principal


async def authenticate(request: Request) -> Principal:
    keys: tuple[bytes, ...] = request.app.state.api_keys
    token = bearer_from(request.headers.get("authorization"))
    if token is not None:
        if keys and is_bootstrap_key(keys, token):
            return FULL_ACCESS
        found = await key_service(request).principal_for(token)
        if found is not None:
            return found
    # Open while no key exists at all (whatever the request sent); with a bootstrap key configured
    # that is known without the database.
    if not keys and await key_service(request).is_open():
        return FULL_ACCESS
    if token is None:
        raise Unauthenticated("an API key is required: Authorization: Bearer <key>")
    raise Unauthenticated("the API key is not valid")


async def still_authorized(request: Request, scope: Scope) -> bool:
    """Whether the request's key still stands as ManagementRoute authorized it, for a response
    that lasts (the event stream): not deleted, still granting `scope`, the same scopes and queues;
    a request without a key, while the API is still open. Read through ApiKeyService's cache, so a
    deleted key fails within its `cache_seconds` (and asking often costs no database round trip)."""
    try:
        principal = await authenticate(request)
        principal.require(scope)
    except (Unauthenticated, Forbidden):
        return False
    return principal == request.state.principal


def principal_of(request: Request) -> Principal:
    """The principal ManagementRoute authorized this request as."""
    return request.state.principal


def queues_of(request: Request) -> frozenset[str] | None:
    """The queues this request's key is limited to; None: every queue."""
    return request.state.principal.queues


class ManagementRoute(StrictJSONRoute):
    """A route that takes an API key with the scope its endpoint declares (@requires; `admin` when
    it declares none) unless the API is open, checked before its body; and refuses what it does not
    declare: unknown query parameters (422), a body that is not JSON (415)."""

    strict_input = True

    def __init__(self, path: str, endpoint: Callable[..., Any], **kwargs: Any) -> None:
        setattr(endpoint, _ROUTED_ATTRIBUTE, True)  # a later @requires would not be read: it refuses
        super().__init__(path, endpoint, **kwargs)

    @property
    def scope(self) -> Scope:
        """The scope an API key needs for this route."""
        return declared_scope(self.endpoint) or UNDECLARED_SCOPE

    @property
    def declares_scope(self) -> bool:
        """Its endpoint declares its scope (@requires) rather than falling back to admin."""
        return declared_scope(self.endpoint) is not None

    def gate(self) -> Callable[[Request], Awaitable[object]]:
        scope = self.scope

        async def check_key(request: Request) -> None:
            await authorize(request, scope)

        return check_key
