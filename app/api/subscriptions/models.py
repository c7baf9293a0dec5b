"""Request and response models of /v1/subscriptions."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal
from uuid import UUID

from pydantic import AfterValidator, AwareDatetime, Field, Strict, StringConstraints, field_validator

from app.api.executions.models import EventOut, EventTypeName
from app.api.fields import Name, ResponseModel, StrictModel, rfc3339_text, within_utc_years
from app.api.handlers.models import HandlerSecretOut, _deliverable
from app.domain.handler_urls import MAX_URL_LENGTH

MAX_FILTER = 100


def _distinct(values: list[str] | None) -> list[str] | None:
    if values is not None and len(set(values)) != len(values):
        raise ValueError("names a value twice")
    return values


class SubscriptionIn(StrictModel):
    url: Annotated[str, Strict(), StringConstraints(max_length=MAX_URL_LENGTH), AfterValidator(_deliverable)] = Field(
        description="Where events are POSTed: the same rules as a handler's URL (http:// or https://, called exactly "
                    "as written; an IP host must be one JOBWIRE_HANDLER_NETWORKS allows, a host name is judged by "
                    "the address it resolves to at each try).")
    types: Annotated[list[EventTypeName], Field(min_length=1, max_length=MAX_FILTER),
                     AfterValidator(_distinct)] | None = Field(None, description="event types it receives; omitted: "
                                                                                 "every type")
    queues: Annotated[list[Name], Field(min_length=1, max_length=MAX_FILTER),
                      AfterValidator(_distinct)] | None = Field(None, description="only events of these queues; "
                                                                                  "omitted: every queue")
    handlers: Annotated[list[Name], Field(min_length=1, max_length=MAX_FILTER),
                        AfterValidator(_distinct)] | None = Field(None, description="only events of these handlers; "
                                                                                    "omitted: every handler")


class SubscriptionOut(ResponseModel):
    name: str
    url: str
    types: list[str] | None
    queues: list[str] | None
    handlers: list[str] | None
    state: Literal["enabled", "disabled"] = Field(
        description="disabled: it failed without a success for JOBWIRE_EVENT_DISABLE_AFTER; its deliveries are kept, "
                    "nothing is sent, events go on being kept for it; a PUT enables it again")
    failing_since: datetime | None = Field(description="its answers have failed since then (null: the last one "
                                                       "succeeded); one delivery at a time probes it meanwhile")
    failures: int = Field(description="failed tries in a row")
    retry_at: datetime | None = Field(description="the next probe while it fails")
    last_error: str | None = Field(description="the last failed try's error")
    disabled_at: datetime | None
    backlog: int = Field(description="deliveries not yet acknowledged nor dead")
    created_at: datetime
    updated_at: datetime
    secret: str | None = Field(
        None, description="Signing secret (whsec_…), in the response that created the subscription only.")
    secrets: list[HandlerSecretOut] = Field(
        description="The signing secrets that sign each delivery now (one `v1,` signature each), newest first.")


class SubscriptionList(ResponseModel):
    items: list[SubscriptionOut]


class DeliveryOut(ResponseModel):
    id: int
    event: EventOut = Field(description="the item it sends (its body), as GET /v1/events lists it")
    execution_id: UUID
    status: Literal["pending", "failed", "delivered", "dead"] = Field(
        description="pending: not tried yet; failed: tried, tried again at next_try_at; delivered: a 2xx answered; "
                    "dead: not acknowledged within JOBWIRE_EVENT_RETRY_SECONDS, or its destination is refused")
    tries: int
    created_at: datetime
    next_try_at: datetime | None = Field(description="pending and failed ones: when it is tried next (no sooner)")
    last_try_at: datetime | None
    last_status: int | None = Field(description="the last try's HTTP status (null: no answer)")
    last_error: str | None
    completed_at: datetime | None


class DeliveryPage(ResponseModel):
    items: list[DeliveryOut]
    next_cursor: str | None


class RecoverIn(StrictModel):
    since: AwareDatetime = Field(description="RFC 3339 time with a zone: the window's start (inclusive)")
    until: AwareDatetime | None = Field(None, description="the window's end (exclusive); omitted: now")

    _text = field_validator("since", "until", mode="before")(rfc3339_text)
    _in_range = field_validator("since", "until")(within_utc_years)


class Recovered(ResponseModel):
    recovered: int = Field(description="deliveries opened: one per stored event of the window it wants")

