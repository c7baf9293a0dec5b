"""Subscriptions: each event subscription's state, backlog and failing deliveries, with resend
(as POST /v1/subscriptions/{name}/deliveries/{id}/resend). The API keeps every subscription route
to scope admin, so does this page: a key without it is told so and sees none."""

from __future__ import annotations

from dataclasses import dataclass

from fastapi import APIRouter
from starlette.requests import Request
from starlette.responses import Response

from app.domain.access import Scope
from app.domain.errors import JobwireError, NotFound
from app.domain.subscriptions import Delivery, DeliveryStatus, Subscription
from app.ui.access import viewer
from app.ui.context import ui_of
from app.ui.render import acting, back, render

router = APIRouter()
FAILING_SHOWN = 10  # the newest failing (being retried) and dead deliveries shown per subscription, each


@dataclass(frozen=True, slots=True)
class SubscriptionRow:
    subscription: Subscription
    failing: list[Delivery]  # failed, to be tried again
    dead: list[Delivery]  # given up on: resend is the way back
    more: bool  # more of either than shown


@router.get("/ui/subscriptions")
async def subscriptions(request: Request) -> Response:
    who = await viewer(request)
    if not who.can_admin:
        return render(request, who, "subscriptions.html", rows=[], allowed=False)
    service = ui_of(request).subscriptions
    rows = []
    for s in await service.list(who.queues):
        pages = []
        for status in (DeliveryStatus.FAILED, DeliveryStatus.DEAD):
            try:
                pages.append(await service.list_deliveries(s.name, after=None, limit=FAILING_SHOWN, status=status,
                                                           confine=who.queues))
            except NotFound:  # deleted meanwhile
                pages = []
                break
        if len(pages) == 2:
            rows.append(SubscriptionRow(s, pages[0].items, pages[1].items,
                                        any(p.next_cursor is not None for p in pages)))
    return render(request, who, "subscriptions.html", rows=rows, allowed=True, shown=FAILING_SHOWN)


@router.post("/ui/subscriptions/{name}/deliveries/{delivery_id}/resend")
async def resend(request: Request, name: str, delivery_id: str) -> Response:
    who, fields = await acting(request, Scope.ADMIN)
    page = "/ui/subscriptions"
    if not delivery_id.isdigit() or not 0 < int(delivery_id) < 2**63:
        return back(request, page, f"No delivery {delivery_id!r}.", "error", who)
    try:
        await ui_of(request).subscriptions.resend(name, int(delivery_id), who.queues)
    except JobwireError as exc:
        return back(request, page, str(exc), "error", who)
    return back(request, page, f"Delivery {delivery_id} of {name} is sent again now.", viewer=who)
