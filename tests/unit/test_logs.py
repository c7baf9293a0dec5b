"""A handler's log message as stored (DESIGN §5): null → `<null>`, C0 controls except \\n \\r \\t
removed, then over 8192 code points → the first 8192 and `…[truncated N chars]`."""

from __future__ import annotations

import pytest

from app.domain.jsonsafety import UnstorableJson, check_storable
from app.domain.logs import MAX_MESSAGE_CHARS, normalize_message


def test_a_null_message_is_stored_as_a_marker() -> None:
    assert normalize_message(None) == "<null>"
    assert normalize_message("") == ""


def test_c0_controls_go_except_tab_newline_and_carriage_return() -> None:
    every_c0 = "".join(chr(c) for c in range(0x20))
    assert normalize_message(f"a{every_c0}b") == "a\t\n\rb"
    assert normalize_message("DEL\x7f and C1\x85 are not C0") == "DEL\x7f and C1\x85 are not C0"
    assert normalize_message("  spaces kept  ") == "  spaces kept  "


def test_truncation_counts_code_points_after_stripping() -> None:
    assert normalize_message("\x00" * 5 + "x" * MAX_MESSAGE_CHARS) == "x" * MAX_MESSAGE_CHARS
    assert normalize_message("x" * (MAX_MESSAGE_CHARS + 1)) == "x" * MAX_MESSAGE_CHARS + "…[truncated 1 chars]"
    emoji = "👩‍💻"  # three code points (woman, zero-width joiner, laptop): counted as three
    kept = normalize_message(emoji * 3000)
    assert kept == (emoji * 3000)[:MAX_MESSAGE_CHARS] + "…[truncated 808 chars]"


def test_a_route_that_strips_nul_may_accept_it_in_values_but_never_in_keys() -> None:
    check_storable({"message": "a\x00b"}, nul_in_strings=True)
    with pytest.raises(UnstorableJson):
        check_storable({"message": "a\x00b"})
    with pytest.raises(UnstorableJson):
        check_storable({"mess\x00age": "b"}, nul_in_strings=True)
