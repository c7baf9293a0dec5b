"""Every fault of a refused enqueue in one 422: when the schema refuses POST /v1/jobs or
/v1/jobs/batch, the database is asked what it would refuse of the rest (unknown handlers, an
idempotency key reused with another body, …: EnqueueService.refusals, jobwire_enqueue's own
checks in a transaction rolled back), and the answer names those too, in item order, so a client
fixes everything in one round trip. Only a refused request pays for it.

An item the schema passed is asked as it is; an item the schema refused, about its handler alone
(its other fields are not what they were sent as: a key reused with another body cannot be judged
on them); an item not an object, or whose handler is at fault, is not asked.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from fastapi.exceptions import RequestValidationError
from pydantic import ValidationError
from starlette.requests import Request

from app.api.auth import queues_of
from app.api.body import MAX_NAMED_ERRORS
from app.api.jobs.models import JobIn
from app.api.services import services_of
from app.domain.executions import NewJob
from app.domain.names import is_valid_name
from app.domain.tracing import valid_traceparent
from app.services.enqueue import handler_only

Loc = tuple[Any, ...]


async def every_fault(request: Request, refused: RequestValidationError, *, batch: bool) -> RequestValidationError:
    """`refused` (the schema's errors) with the database's refusals of the request's other
    fields added; `batch`: the body is `{jobs: [...]}`, else one job."""
    items = _items(getattr(request, "_json", None), batch)
    errors = list(refused.errors())
    if items is None or any(_about_the_list(e["loc"], batch) for e in errors):
        return refused
    at_fault: dict[int, list[Loc]] = {}
    for e in errors:
        place = _item_of(e["loc"], batch)
        if place is not None:
            at_fault.setdefault(place[0], []).append(place[1])
    # Items past the one of the last error the answer can name could only add errors it drops.
    last = _item_of(errors[MAX_NAMED_ERRORS - 1]["loc"], batch) if len(errors) >= MAX_NAMED_ERRORS else None
    upto = len(items) if last is None else last[0]
    trace = valid_traceparent(request.headers.get("traceparent"))
    asked = [(i, job) for i, item in enumerate(items[:upto])
             if (job := _asked(item, at_fault.get(i), trace)) is not None]
    if not asked:
        return refused
    found = await services_of(request).enqueue.refusals(asked, queues_of(request))
    added = [{"type": "enqueue_refused", "loc": _loc(i, e.field, batch), "msg": e.message, "input": None}
             for i, e in found]
    merged = sorted([*errors, *added], key=lambda e: _order(e["loc"], batch))
    return RequestValidationError(merged[:MAX_NAMED_ERRORS], body=refused.body)


def _items(document: Any, batch: bool) -> list[Any] | None:
    if not isinstance(document, dict):
        return None
    if not batch:
        return [document]
    jobs = document.get("jobs")
    return jobs if isinstance(jobs, list) and jobs else None


def _about_the_list(loc: Loc, batch: bool) -> bool:
    """The error is about the jobs list itself (its length or type): no item is asked."""
    return batch and tuple(loc) == ("body", "jobs")


def _loc(position: int | None, field: str, batch: bool) -> Loc:
    """Where a refusal points, as the schema's errors do: (body, jobs, i, field) or (body, field)."""
    within = tuple(field.split(".")) if field else ()
    if position is None or not batch:
        return ("body", *within)
    return ("body", "jobs", position, *within)


def _item_of(loc: Loc, batch: bool) -> tuple[int, Loc] | None:
    """(the item's position, the path within it) of an error about an item; None otherwise."""
    if not batch:
        return (0, tuple(loc[1:])) if loc and loc[0] == "body" else None
    if len(loc) >= 3 and tuple(loc[:2]) == ("body", "jobs") and isinstance(loc[2], int):
        return loc[2], tuple(loc[3:])
    return None


def _order(loc: Loc, batch: bool) -> int:
    place = _item_of(loc, batch)
    return -1 if place is None or (not batch and not place[1]) else place[0]


def _asked(item: Any, faults: Sequence[Loc] | None, traceparent: str | None) -> NewJob | None:
    """The job the database is asked about for an item, or None (not asked)."""
    if not isinstance(item, dict):
        return None
    if not faults:
        try:
            return JobIn.model_validate(item).to_new_job(traceparent=traceparent)
        except ValidationError:  # valid in the batch, so valid alone: unreachable, but not asked then
            return None
    handler = item.get("handler")
    if any(not f or f[0] == "handler" for f in faults) or not isinstance(handler, str) or not is_valid_name(handler):
        return None
    return handler_only(handler)
