"""W3C Trace Context: the `traceparent` an enqueue request may carry into the job's metadata."""

from __future__ import annotations

import re
from typing import Any

import orjson

from app.domain.jsontext import loads

# Version 00 only (https://www.w3.org/TR/trace-context/#traceparent-header): lower-case hex,
# trace id and parent id not all zeros. jobwire_enqueue checks the same in SQL.
_TRACEPARENT = re.compile(r"00-([0-9a-f]{32})-([0-9a-f]{16})-[0-9a-f]{2}")


def valid_traceparent(value: str | None) -> str | None:
    """The header if it is a valid traceparent, else None: an invalid one is ignored, as the
    W3C recommendation asks of a receiver."""
    if value is None:
        return None
    match = _TRACEPARENT.fullmatch(value.strip(" \t"))
    if match is None or match[1] == "0" * 32 or match[2] == "0" * 16:
        return None
    return match[0]


def stored_traceparent(metadata: Any) -> str | None:
    """The valid traceparent a job's metadata holds at `context.traceparent`, else None. `metadata`
    is a JSON value, or an orjson fragment of its text (as a claim returns it): that is parsed only
    when the text names a traceparent."""
    if isinstance(metadata, orjson.Fragment):
        text = orjson.dumps(metadata)
        if b'"traceparent"' not in text:
            return None
        metadata = loads(text)
    context = metadata.get("context") if isinstance(metadata, dict) else None
    value = context.get("traceparent") if isinstance(context, dict) else None
    return valid_traceparent(value) if isinstance(value, str) else None
