"""Request and response models of /v1/handlers."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated
from uuid import UUID

from pydantic import AfterValidator, Field, Strict, StringConstraints

from app.api.fields import ResponseModel, Seconds, StrictModel
from app.domain.handler_urls import MAX_URL_LENGTH, handler_url_problem


def _deliverable(url: str) -> str:
    problem = handler_url_problem(url)
    if problem:
        raise ValueError(problem)
    return url


class HandlerIn(StrictModel):
    url: Annotated[str, Strict(), StringConstraints(max_length=MAX_URL_LENGTH), AfterValidator(_deliverable)] = Field(
        description="http:// or https://, called exactly as written: no user-info or fragment; a lower-case ASCII "
                    "host (IDNA names in their xn-- form, IPv4 as a.b.c.d, IPv6 in brackets); anything else outside "
                    "RFC 3986's characters percent-encoded. An IP host must be one JOBWIRE_HANDLER_NETWORKS allows; "
                    "a host name is judged by the address it resolves to at each call.")
    timeout_seconds: Seconds | None = None
    max_concurrency: Annotated[int, Strict(), Field(ge=1, le=1_000_000)] | None = None
    stateful: Annotated[bool, Strict()] = False


class HandlerSecretOut(ResponseModel):
    """One of a handler's signing secrets, never its value."""

    id: UUID
    created_at: datetime
    expires_at: datetime | None = Field(description="when it stops signing; null: never (until deleted)")


class HandlerOut(ResponseModel):
    name: str
    url: str
    timeout_seconds: float | None
    max_concurrency: int | None
    stateful: bool
    created_at: datetime
    updated_at: datetime
    secret: str | None = Field(
        None, description="Signing secret (whsec_…), in the response that created the handler only.")
    secrets: list[HandlerSecretOut] = Field(
        description="The signing secrets that sign each dispatch now (one `v1,` signature each), newest first: "
                    "those without an expiry and those scheduled to expire; expired ones are not listed.")


class HandlerList(ResponseModel):
    items: list[HandlerOut]


# Rotation windows are bounded so the expiry stays a valid timestamp (a year is plenty).
MAX_ROTATION_SECONDS = 365 * 86400


class SecretIn(StrictModel):
    expire_others_after_seconds: Annotated[float, Strict(), Field(ge=0, le=MAX_ROTATION_SECONDS)] | None = Field(
        None, description="The handler's other secrets stop signing this many seconds from now (0: at once); "
                          "omitted, they sign until deleted.")


class SecretCreated(ResponseModel):
    id: UUID
    secret: str = Field(description="The new signing secret (whsec_…): shown in this response only.")
    created_at: datetime
