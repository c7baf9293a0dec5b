"""The traceparent of an enqueue request: W3C Trace Context version 00, or ignored."""

from __future__ import annotations

import pytest

from app.domain.tracing import valid_traceparent

VALID = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"


def test_a_valid_traceparent_is_kept_as_sent() -> None:
    assert valid_traceparent(VALID) == VALID
    assert valid_traceparent(f" {VALID}\t") == VALID  # optional whitespace around a header value


@pytest.mark.parametrize("value", [
    None, "", VALID.upper(), "ff" + VALID[2:], VALID + "-00", VALID[:-1],
    "00-" + "0" * 32 + VALID[35:], VALID[:36] + "0" * 16 + "-01", VALID.replace("-", "_"),
])
def test_anything_else_is_ignored(value: str | None) -> None:
    assert valid_traceparent(value) is None
