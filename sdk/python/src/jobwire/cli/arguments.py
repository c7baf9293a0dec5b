"""Argument types shared by the commands: a bad value is a usage error (exit 2), said by argparse."""

from __future__ import annotations

import argparse
import json
from typing import Any


def json_value(text: str) -> Any:
    """A JSON document given on the command line (`--payload '{"order": 42}'`)."""
    try:
        return json.loads(text)
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


def given(args: argparse.Namespace, *names: str) -> dict[str, Any]:
    """The options among `names` the user gave (not None), by their API field names."""
    return {name: getattr(args, name) for name in names if getattr(args, name, None) is not None}
