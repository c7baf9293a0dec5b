"""JSON that PostgreSQL's jsonb can store.

orjson's parser already refuses NaN, Infinity, overflowing numbers (1e400) and lone
surrogates; this walk refuses what it lets through: NUL characters (in keys or strings)
and nesting deeper than MAX_DEPTH.
"""

from __future__ import annotations

import math
from typing import Any

MAX_DEPTH = 64


class UnstorableJson(ValueError):
    def __init__(self, path: str, message: str) -> None:
        super().__init__(message)
        self.path = path
        self.message = message


def check_storable(value: Any, path: str = "", *, nul_in_strings: bool = False) -> None:
    """Raise UnstorableJson naming the first offending location, else return None.
    nul_in_strings: let NUL through in string values (not keys), for a caller that strips it."""
    # Iterative walk: a hostile body cannot exhaust the Python stack.
    stack: list[tuple[Any, str, int]] = [(value, path, 0)]
    while stack:
        node, where, depth = stack.pop()
        if isinstance(node, str):
            if "\x00" in node and not nul_in_strings:
                raise UnstorableJson(where, "strings must not contain \\u0000")
        elif isinstance(node, float):
            if not math.isfinite(node):
                raise UnstorableJson(where, "numbers must be finite")
        elif isinstance(node, dict):
            if depth >= MAX_DEPTH:
                raise UnstorableJson(where, f"nesting deeper than {MAX_DEPTH} levels")
            for key, child in node.items():
                if "\x00" in key:
                    raise UnstorableJson(where, "keys must not contain \\u0000")
                stack.append((child, f"{where}.{key}" if where else key, depth + 1))
        elif isinstance(node, list):
            if depth >= MAX_DEPTH:
                raise UnstorableJson(where, f"nesting deeper than {MAX_DEPTH} levels")
            for i, child in enumerate(node):
                stack.append((child, f"{where}[{i}]", depth + 1))
