"""POST/GET/DELETE /v1/api-keys: keys kept in the database, with scopes and queues (admin only)."""

from __future__ import annotations

from uuid import UUID

from fastapi import APIRouter, Request
from starlette.responses import Response

from app.api.api_keys.models import ApiKeyCreated, ApiKeyIn, ApiKeyList
from app.api.api_keys.views import api_key_view
from app.api.auth import ManagementRoute, key_service, requires
from app.api.responses import FastJSON, problems
from app.domain.access import Scope

router = APIRouter(prefix="/v1/api-keys", tags=["api-keys"], route_class=ManagementRoute)


@router.post("", operation_id="createApiKey", response_model=ApiKeyCreated, status_code=201)
@requires(Scope.ADMIN)
async def create_api_key(body: ApiKeyIn, request: Request) -> Response:
    """Create a key. The response carries the key itself (`key`, `jw_…`), shown only now: Jobwire
    stores its SHA-256 hash. It works on every node at once. The first key created while no
    bootstrap key (JOBWIRE_API_KEYS) is configured closes the API: within 2 s on every node."""
    created = await key_service(request).create(body.name, [Scope(s) for s in body.scopes], body.queues)
    return FastJSON(api_key_view(created.key, secret=created.secret), status_code=201)


@router.get("", operation_id="listApiKeys", response_model=ApiKeyList)
@requires(Scope.ADMIN)
async def list_api_keys(request: Request) -> Response:
    """Every database key, oldest first, without the keys themselves (bootstrap keys are not listed)."""
    return FastJSON({"items": [api_key_view(k) for k in await key_service(request).list()]})


@router.delete("/{key_id}", operation_id="deleteApiKey", status_code=204, responses=problems(404, 409))
@requires(Scope.ADMIN)
async def delete_api_key(key_id: UUID, request: Request) -> Response:
    """Revoke a key: refused on this node at once, on every node within 2 s. 409 while no bootstrap key
    (JOBWIRE_API_KEYS) is configured, when it is the last database key (deleting it would open the
    API) or the last one with scope `admin` (no key could manage keys, handlers or schedules)."""
    await key_service(request).delete(key_id)
    return Response(status_code=204)
