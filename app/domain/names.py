"""Names that appear in URL paths: handlers, queues, job ids, steps, idempotency keys."""

from __future__ import annotations

import re

NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,254}$"
_NAME = re.compile(NAME_PATTERN)


def is_valid_name(value: str) -> bool:
    return _NAME.fullmatch(value) is not None  # `$` alone would let a trailing newline through
