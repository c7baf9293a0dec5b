"""Field types and base models shared by the resources' request and response models."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Annotated, Any

from pydantic import (AfterValidator, AwareDatetime, BaseModel, BeforeValidator, ConfigDict, Field, Strict,
                      StringConstraints)

from app.domain.names import NAME_PATTERN

SEVEN_DAYS = 7 * 86400
INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1

Name = Annotated[str, Strict(), StringConstraints(pattern=NAME_PATTERN)]
Seconds = Annotated[float, Strict(), Field(gt=0, le=SEVEN_DAYS)]  # Strict: ints pass, "5" and true do not
Int32 = Annotated[int, Strict(), Field(ge=INT32_MIN, le=INT32_MAX)]
JsonObject = dict[str, Any]


class StrictModel(BaseModel):
    """A request body: unknown fields are refused, nothing is coerced (fields say Strict)."""

    model_config = ConfigDict(extra="forbid")


class ResponseModel(BaseModel):
    """A response body, as the OpenAPI document declares it: exactly these fields. Routes send
    their views through orjson, not through these models (pydantic's validation and
    serialization cost measurably on a 1,000-item batch, and cannot write the orjson fragments
    that carry integers past 64 bits); tests/api_contract.py checks every 2xx body the test
    suite receives against its route's model instead."""

    model_config = ConfigDict(extra="forbid")


def within_utc_years(value: datetime | None) -> datetime | None:
    # An offset can push a valid wall time outside Python's years 1-9999 in UTC.
    if value is not None:
        try:
            value.astimezone(UTC)
        except OverflowError:
            raise ValueError("must fall within the years 1-9999 in UTC") from None
    return value


def rfc3339_text(value: Any) -> Any:
    """A `mode="before"` validator: a time must come as text (pydantic takes a number as epoch seconds)."""
    if value is not None and not isinstance(value, str):
        raise ValueError("must be an RFC 3339 string with a time zone")
    return value


_RFC3339 = re.compile(r"\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d{1,9})?([Zz]|[+-]\d{2}:\d{2})")


def rfc3339_query(value: Any) -> Any:
    """A `mode="before"` validator of a time in a query parameter: RFC 3339 text with an offset
    (pydantic would also take a number as epoch seconds, and a date alone)."""
    if isinstance(value, str) and not _RFC3339.fullmatch(value):
        raise ValueError("must be an RFC 3339 time with an offset, as 2026-12-01T00:00:00Z")
    return value


# A time in a query parameter: RFC 3339 with an offset, within the years 1-9999 in UTC.
QueryTime = Annotated[AwareDatetime, BeforeValidator(rfc3339_query), AfterValidator(within_utc_years)]
