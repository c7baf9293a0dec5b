"""/v1/subscriptions: subscribers of the event feed, their signing secrets and their deliveries."""

from __future__ import annotations

from typing import Annotated, Any
from uuid import UUID

from fastapi import APIRouter, Path, Query, Request
from starlette.responses import Response

from app.api.auth import ManagementRoute, queues_of, requires
from app.api.executions.views import event_view
from app.api.fields import Name
from app.api.handlers.models import SecretCreated, SecretIn
from app.api.handlers.views import new_secret_view
from app.api.responses import FastJSON, problems
from app.api.services import services_of
from app.api.subscriptions.models import (
    DeliveryOut, DeliveryPage, RecoverIn, Recovered, SubscriptionIn, SubscriptionList, SubscriptionOut,
)
from app.domain.access import Scope
from app.domain.errors import FieldError, ValidationFailed
from app.domain.subscriptions import Delivery, DeliveryStatus, Subscription, SubscriptionSpec
from app.services.subscriptions import MAX_DELIVERY_PAGE

router = APIRouter(prefix="/v1/subscriptions", tags=["subscriptions"], route_class=ManagementRoute)
SubscriptionName = Annotated[Name, Path(description="subscription name")]


def subscription_view(s: Subscription, *, with_secret: bool = False) -> dict[str, Any]:
    view: dict[str, Any] = {
        "name": s.name, "url": s.spec.url,
        "types": None if s.spec.types is None else list(s.spec.types),
        "queues": None if s.spec.queues is None else list(s.spec.queues),
        "handlers": None if s.spec.handlers is None else list(s.spec.handlers),
        "state": s.state.value, "failing_since": s.failing_since, "failures": s.failures, "retry_at": s.retry_at,
        "last_error": s.last_error, "disabled_at": s.disabled_at, "backlog": s.backlog,
        "created_at": s.created_at, "updated_at": s.updated_at,
        "secrets": [{"id": str(x.id), "created_at": x.created_at, "expires_at": x.expires_at} for x in s.secrets],
    }
    if with_secret:
        view["secret"] = s.secret
    return view


def delivery_view(d: Delivery) -> dict[str, Any]:
    return {"id": d.id, "event": event_view(d.event), "execution_id": str(d.execution_id), "status": d.status.value,
            "tries": d.tries, "created_at": d.created_at, "next_try_at": d.next_try_at,
            "last_try_at": d.last_try_at, "last_status": d.last_status, "last_error": d.last_error,
            "completed_at": d.completed_at}


def _tuple(values: list[str] | None) -> tuple[str, ...] | None:
    return None if values is None else tuple(values)


@router.put("/{name}", operation_id="putSubscription", response_model=SubscriptionOut, status_code=200,
            responses={201: {"model": SubscriptionOut,
                             "description": "created; the response carries the signing secret"},
                       **problems(403, 422)})
@requires(Scope.ADMIN)
async def put_subscription(name: SubscriptionName, body: SubscriptionIn, request: Request) -> Response:
    """Register (201, with the `secret` shown only now) or replace (200, keeping its secrets and its
    position in the feed) a subscriber of the event feed. A new subscription receives the events
    committed after it was created; replacing one enables it again and forgets its failures.
    Each event it wants is POSTed to `url`, signed per Standard Webhooks (`webhook-id` is the
    event's id, the same on every try), at least once: retried after 1 s, doubling to 10
    minutes, for JOBWIRE_EVENT_RETRY_SECONDS. Per execution, a later event waits until the
    earlier one is acknowledged or dead."""
    s = services_of(request)
    spec = SubscriptionSpec(url=body.url, types=_tuple(body.types), queues=_tuple(body.queues),
                            handlers=_tuple(body.handlers))
    subscription, created = await s.subscriptions.put(name, spec, queues_of(request))
    return FastJSON(subscription_view(subscription, with_secret=created), status_code=201 if created else 200)


@router.get("", operation_id="listSubscriptions", response_model=SubscriptionList)
@requires(Scope.ADMIN)
async def list_subscriptions(request: Request) -> Response:
    s = services_of(request)
    return FastJSON({"items": [subscription_view(x) for x in await s.subscriptions.list(queues_of(request))]})


@router.get("/{name}", operation_id="getSubscription", response_model=SubscriptionOut, responses=problems(404))
@requires(Scope.ADMIN)
async def get_subscription(name: SubscriptionName, request: Request) -> Response:
    s = services_of(request)
    return FastJSON(subscription_view(await s.subscriptions.get(name, queues_of(request))))


@router.delete("/{name}", operation_id="deleteSubscription", status_code=204, responses=problems(404))
@requires(Scope.ADMIN)
async def delete_subscription(name: SubscriptionName, request: Request) -> Response:
    """Delete the subscription with its secrets and deliveries (nothing more is sent)."""
    s = services_of(request)
    await s.subscriptions.delete(name, queues_of(request))
    return Response(status_code=204)


@router.post("/{name}/secrets", operation_id="addSubscriptionSecret",
             response_model=SecretCreated, status_code=201, responses=problems(404, 409))
@requires(Scope.ADMIN)
async def add_subscription_secret(name: SubscriptionName, request: Request, body: SecretIn | None = None
                                  ) -> Response:
    """Add a signing secret, as for a handler: each delivery carries one `v1,` signature per
    active secret; `expire_others_after_seconds` retires the others. Shown in this response only."""
    s = services_of(request)
    added = await s.subscriptions.add_secret(name, body.expire_others_after_seconds if body else None,
                                             queues_of(request))
    return FastJSON(new_secret_view(added), status_code=201)


@router.delete("/{name}/secrets/{secret_id}", operation_id="deleteSubscriptionSecret",
               status_code=204, responses=problems(404, 409))
@requires(Scope.ADMIN)
async def delete_subscription_secret(name: SubscriptionName,
                                     secret_id: Annotated[UUID, Path(description="secret id")],
                                     request: Request) -> Response:
    """Retire a signing secret at once; 409 for its last secret that does not expire."""
    s = services_of(request)
    await s.subscriptions.delete_secret(name, secret_id, queues_of(request))
    return Response(status_code=204)


@router.get("/{name}/deliveries", operation_id="listSubscriptionDeliveries", response_model=DeliveryPage,
            responses=problems(404, 422))
@requires(Scope.ADMIN)
async def list_deliveries(
    name: SubscriptionName,
    request: Request,
    status: Annotated[DeliveryStatus | None, Query(description="only deliveries in this status")] = None,
    after: Annotated[str | None, Query(max_length=200, description="the previous page's `next_cursor`")] = None,
    limit: Annotated[int, Query(ge=1, le=MAX_DELIVERY_PAGE, description="items per page")] = 100,
) -> Response:
    """The subscription's deliveries, newest first: the event, tries, the last status and error,
    the next try."""
    s = services_of(request)
    page = await s.subscriptions.list_deliveries(name, after=after, limit=limit, status=status,
                                                 confine=queues_of(request))
    return FastJSON({"items": [delivery_view(d) for d in page.items], "next_cursor": page.next_cursor})


@router.post("/{name}/deliveries/{delivery_id}/resend", operation_id="resendDelivery", response_model=DeliveryOut,
             status_code=202, responses=problems(404, 409))
@requires(Scope.ADMIN)
async def resend_delivery(name: SubscriptionName,
                          delivery_id: Annotated[int, Path(ge=1, lt=2**63, description="delivery id")],
                          request: Request) -> Response:
    """Send the delivery again now, whatever its status, with a new deadline (the same
    `webhook-id`). 409 while a node is sending it."""
    s = services_of(request)
    return FastJSON(delivery_view(await s.subscriptions.resend(name, delivery_id, queues_of(request))),
                    status_code=202)


@router.post("/{name}/recover", operation_id="recoverSubscription", response_model=Recovered, status_code=202,
             responses=problems(404, 422))
@requires(Scope.ADMIN)
async def recover_subscription(name: SubscriptionName, body: RecoverIn, request: Request) -> Response:
    """Send again every stored event of [since, until) that the subscription wants (retention
    removes events: older ones are gone), whether it was delivered or not."""
    if body.until is not None and body.until <= body.since:
        raise ValidationFailed([FieldError("until", "must be after `since`")])
    s = services_of(request)
    recovered = await s.subscriptions.recover(name, body.since, body.until, queues_of(request))
    return FastJSON({"recovered": recovered}, status_code=202)
