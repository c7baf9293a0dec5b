"""JSON PostgreSQL's jsonb cannot store is refused, naming where it is."""

from __future__ import annotations

import math
from typing import Any

import pytest

from app.domain.jsonsafety import MAX_DEPTH, UnstorableJson, check_storable


def nested_lists(levels: int) -> Any:
    value: Any = 1
    for _ in range(levels):
        value = [value]
    return value


def nested_mixed(levels: int) -> Any:
    value: Any = "leaf"
    for i in range(levels):
        value = {"k": value} if i % 2 else [value]
    return value


def test_ordinary_json_is_storable() -> None:
    check_storable({"a": [1, 2.5, "x", None, True, {"b": []}], "ü": "€", "": {}})
    check_storable(None)
    check_storable("plain")


def test_nul_in_a_string_is_refused_with_its_path() -> None:
    with pytest.raises(UnstorableJson) as info:
        check_storable({"a": [1, "x\x00y"]}, "payload")
    assert info.value.path == "payload.a[1]"
    assert "\\u0000" in info.value.message


def test_nul_in_a_key_is_refused() -> None:
    with pytest.raises(UnstorableJson, match="keys"):
        check_storable({"outer": {"bad\x00key": 1}})


def test_nul_in_a_top_level_string_is_refused() -> None:
    with pytest.raises(UnstorableJson):
        check_storable("\x00")


@pytest.mark.parametrize("number", [math.nan, math.inf, -math.inf])
def test_non_finite_numbers_are_refused(number: float) -> None:
    with pytest.raises(UnstorableJson, match="finite") as info:
        check_storable({"n": [0, number]})
    assert info.value.path == "n[1]"


def test_large_finite_numbers_and_big_integers_are_storable() -> None:
    check_storable({"f": 1.7976931348623157e308, "i": 10**30})


def test_nesting_of_exactly_max_depth_levels_is_accepted() -> None:
    assert MAX_DEPTH == 64
    check_storable(nested_lists(64))
    check_storable(nested_mixed(64))


def test_nesting_deeper_than_max_depth_is_refused() -> None:
    with pytest.raises(UnstorableJson, match="64"):
        check_storable(nested_lists(65))
    with pytest.raises(UnstorableJson, match="64"):
        check_storable(nested_mixed(65))


def test_very_deep_nesting_is_refused_without_recursion_error() -> None:
    with pytest.raises(UnstorableJson):
        check_storable(nested_lists(100_000))
