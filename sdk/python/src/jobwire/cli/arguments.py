"""Argument types shared by the commands: a bad value is a usage error (exit 2), said by argparse
in one line."""

from __future__ import annotations

import argparse
from datetime import datetime
from typing import Any
from uuid import UUID

from jobwire._json import loads


def json_value(text: str) -> Any:
    """A JSON document given on the command line (`--payload '{"order": 42}'`); NaN and Infinity
    are no JSON."""
    try:
        return loads(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"not JSON: {exc}") from None


def json_object(text: str) -> dict[str, Any]:
    value = json_value(text)
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError("not a JSON object")
    return value


def positive(text: str) -> int:
    try:
        number = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if number < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1: {number}")
    return number


def batch(text: str) -> dict[str, int]:
    """`SIZE[/WAIT_MS]` as the API's handler batch: up to SIZE (1–500) jobs in one call, a smaller
    call waiting up to WAIT_MS (0–1000, default 0) for more (`50`, `50/200`)."""
    size_text, slash, wait_text = text.strip().partition("/")
    try:
        size, wait = int(size_text), int(wait_text) if slash else 0
    except ValueError:
        raise argparse.ArgumentTypeError(f"not SIZE[/WAIT_MS] (e.g. 50, or 50/200): {text!r}") from None
    if not 1 <= size <= 500 or not 0 <= wait <= 1000:
        raise argparse.ArgumentTypeError(f"SIZE is 1–500 and WAIT_MS 0–1000: {text!r}")
    return {"max_size": size, "max_wait_ms": wait}


PERIOD_UNITS = {"": 1, "s": 1, "m": 60, "h": 3600}


def rate_limit(text: str) -> dict[str, Any]:
    """`LIMIT/PERIOD` as the API's rate limit: at most LIMIT calls start in any PERIOD, in seconds
    or with a unit (`20/1`, `20/1s`, `100/60`, `100/1m`, `5000/1h`). ValueError for anything else."""
    limit_text, slash, period_text = text.strip().partition("/")
    unit = period_text[-1:] if period_text[-1:] in PERIOD_UNITS else ""
    try:
        if not slash:
            raise ValueError
        limit, period = int(limit_text), float(period_text.removesuffix(unit))
    except ValueError:
        raise ValueError(f"not LIMIT/PERIOD (e.g. 20/1s: 20 a second; 100/60: 100 a minute): {text!r}") from None
    if limit < 1:
        raise ValueError(f"the limit must be at least 1: {text!r}")
    if not 0 < period < float("inf"):
        raise ValueError(f"the period must be more than 0 seconds: {text!r}")
    return {"limit": limit, "period_seconds": period * PERIOD_UNITS[unit]}


class RateLimitOption(argparse.Action):
    """An option that takes `LIMIT/PERIOD` (see `rate_limit`); a bad value is a usage error naming
    the option, in `rate_limit`'s words (a `type` that raised ValueError would be said as
    "invalid value"). The reference pages say what it takes by this class (tools/reference_pages.py,
    value_kinds)."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        try:
            setattr(namespace, self.dest, rate_limit(str(values)))
        except ValueError as exc:
            raise argparse.ArgumentError(self, str(exc)) from None


def identifier(kind: str) -> Any:
    """The type of an id argument: a UUID, refused here rather than by the server."""

    def parse(text: str) -> str:
        try:
            return str(UUID(text))
        except ValueError:
            raise argparse.ArgumentTypeError(f"not {kind} id (a UUID): {text!r}") from None

    parse.__name__ = f"{kind} id"
    return parse


execution_id = identifier("an execution")
STATES = ("ENQUEUED", "PROCESSING", "SUCCEEDED", "FAILED", "CANCELLED", "ABANDONED", "DEAD_LETTER", "WAITING")


def execution_filters(parser: argparse.ArgumentParser) -> None:
    """--state, --queue, --handler and --job-id: the filters of a listing and of a bulk action."""
    parser.add_argument("--state", choices=STATES)
    parser.add_argument("--queue")
    parser.add_argument("--handler")
    parser.add_argument("--job-id", dest="job_id")


def listing_filters(parser: argparse.ArgumentParser) -> None:
    """The filters of a listing beside execution_filters: keys, metadata and a time window."""
    execution_filters(parser)
    parser.add_argument("--idempotency-key", dest="idempotency_key")
    parser.add_argument("--concurrency-key", dest="concurrency_key")
    parser.add_argument("--metadata", type=metadata_pair, metavar="KEY:VALUE",
                        help="metadata whose top-level KEY is the string VALUE (split on the first `:`)")
    parser.add_argument("--created-after", dest="created_after", type=instant, metavar="TIME",
                        help="created at or after TIME (RFC 3339 with an offset, e.g. 2026-12-01T00:00:00Z)")
    parser.add_argument("--created-before", dest="created_before", type=instant, metavar="TIME",
                        help="created before TIME (RFC 3339 with an offset)")


LISTING_FILTERS = ("state", "queue", "handler", "job_id", "idempotency_key", "concurrency_key", "metadata",
                   "created_after", "created_before")


def metadata_pair(text: str) -> str:
    """`KEY:VALUE`, as the API takes it (checked here for its `:`)."""
    key, colon, _ = text.partition(":")
    if not colon or not key:
        raise argparse.ArgumentTypeError(f"not KEY:VALUE: {text!r}")
    return text


def instant(text: str) -> str:
    """An RFC 3339 time with an offset (`Z` or `+01:00`), sent as it is."""
    try:
        when = datetime.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an RFC 3339 time: {text!r}") from None
    if when.tzinfo is None:
        raise argparse.ArgumentTypeError(f"give its offset (Z, +01:00): {text!r}")
    return when.isoformat()


def given(args: argparse.Namespace, *names: str) -> dict[str, Any]:
    """The options among `names` the user gave (not None), by their API field names."""
    return {name: getattr(args, name) for name in names if getattr(args, name, None) is not None}
