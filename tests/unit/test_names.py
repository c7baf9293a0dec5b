"""Names (handlers, queues, job ids, step names, idempotency keys) match the pattern of DESIGN §1
as a whole: nothing before, nothing after, not even a newline."""

from __future__ import annotations

import pytest

from app.domain.names import is_valid_name


@pytest.mark.parametrize("name", ["a", "A9", "customer:42", "report.v2", "a_b-c", "x" * 255])
def test_names_of_the_pattern_are_valid(name: str) -> None:
    assert is_valid_name(name)


@pytest.mark.parametrize("name", ["", "-a", ".a", "a b", "a/b", "x" * 256, "abc\n", "\nabc", "a\nb", "é"])
def test_anything_else_is_not_a_name(name: str) -> None:
    assert not is_valid_name(name)
