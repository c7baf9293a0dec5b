"""The JSON text the SDK sends, over HTTP and to `jobwire_enqueue` alike.

The standard library's encoder writes integers of any size with all their digits (Jobwire
stores them exactly); datetimes, dates and UUIDs, which it refuses, are written the way the
API reads them: RFC 3339 and the canonical UUID form. A naive datetime is sent as it is and
refused by Jobwire, not guessed into a time zone here.
"""

from __future__ import annotations

import json
from datetime import date, datetime
from typing import Any
from uuid import UUID


def _default(value: Any) -> Any:
    if isinstance(value, (datetime, date)):
        return value.isoformat()
    if isinstance(value, UUID):
        return str(value)
    raise TypeError(f"{type(value).__name__} is not JSON serialisable")


def dumps(value: Any) -> str:
    return json.dumps(value, default=_default, separators=(",", ":"), ensure_ascii=False)
