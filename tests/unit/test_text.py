"""Outside text (handler replies, errors) is stripped of NUL and truncated before it is stored."""

from __future__ import annotations

from app.domain.text import MAX_ERROR_CHARS, error_text, strip_nul, truncate


def test_strip_nul_removes_every_nul() -> None:
    assert strip_nul("\x00a\x00b\x00") == "ab"
    assert strip_nul("clean") == "clean"


def test_text_at_the_limit_is_kept_whole() -> None:
    assert truncate("abcde", 5) == "abcde"


def test_text_over_the_limit_keeps_the_head_and_counts_what_was_removed() -> None:
    assert truncate("abcdefghij", 4) == "abcd…[truncated 6 chars]"


def test_truncation_counts_code_points_not_bytes() -> None:
    assert truncate("ééééé€€", 5) == "ééééé…[truncated 2 chars]"


def test_error_text_strips_nul_then_truncates() -> None:
    text = error_text("\x00" * 10 + "x" * (MAX_ERROR_CHARS + 3))
    assert "\x00" not in text
    assert text == "x" * MAX_ERROR_CHARS + "…[truncated 3 chars]"


def test_error_text_short_message_is_unchanged() -> None:
    assert error_text("HTTP 500 Internal Server Error") == "HTTP 500 Internal Server Error"


def test_error_text_replaces_lone_surrogates_so_postgresql_can_store_it() -> None:
    text = error_text("bad \ud800 surrogate")
    text.encode("utf-8")  # would raise on a lone surrogate
    assert text.startswith("bad ") and text.endswith(" surrogate")
