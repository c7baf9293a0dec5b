"""JSON text parsed with every integer exact (app/domain/jsontext.py): orjson's answer for
everything but an integer past 64 bits, which comes as an orjson.Fragment of its digits; the
same refusals as orjson on both paths; the fast path (orjson alone) for ordinary text."""

from __future__ import annotations

import json
import math
from typing import Any

import orjson
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from app.domain import jsontext
from app.domain.jsonsafety import check_storable
from app.domain.jsontext import _DIGITS, _LONG_RUN, INT_MAX, INT_MIN, MAX_INTEGER_DIGITS, dumps, loads

BIG = 123456789012345678901234567890
# Any text holding an integer orjson would round takes the standard library's parser.
SLOW = f', "big": {BIG}'


def text_of(value: Any) -> bytes:
    return orjson.dumps(value)


@pytest.mark.parametrize("number", [BIG, -BIG, INT_MAX + 1, INT_MIN - 1, 10**400, -(10**400), 2**200])
def test_an_integer_beyond_64_bits_comes_as_its_exact_digits(number: int) -> None:
    value = loads(f'{{"n": {number}}}'.encode())
    assert isinstance(value["n"], orjson.Fragment)
    assert text_of(value) == f'{{"n":{number}}}'.encode()


def test_a_document_that_is_one_big_integer_comes_as_its_digits() -> None:
    assert text_of(loads(f" {BIG}\n".encode())) == str(BIG).encode()
    assert text_of(loads(str(-BIG))) == str(-BIG).encode()


@pytest.mark.parametrize("number", [INT_MIN, INT_MIN + 1, -1, 0, 1, 10**19 - 1, 10**19, INT_MAX - 1, INT_MAX])
def test_integers_within_64_bits_are_plain_ints_on_either_path(number: int) -> None:
    fast = loads(f'{{"n": {number}}}'.encode())
    slow = loads(f'{{"n": {number}{SLOW}}}'.encode())
    assert type(fast["n"]) is int and fast["n"] == number
    assert type(slow["n"]) is int and slow["n"] == number


@pytest.mark.parametrize("number", ["1.5", "-0.0", "1e300", "-2.2250738585072014e-308", "1e-400", "0.1",
                                    "1.7976931348623157e308", "12345678901234567890.5", "1E+25",
                                    "0.30000000000000004", "-123456789012345678901234.0e-3"])
def test_floats_are_what_orjson_makes_of_them_on_either_path(number: str) -> None:
    expected = orjson.loads(number)
    slow = loads(f'{{"f": {number}{SLOW}}}'.encode())["f"]
    assert type(slow) is float
    assert slow == expected and math.copysign(1, slow) == math.copysign(1, expected)


@pytest.mark.parametrize("text", ["123456789012345678901234567890", "-123456789012345678901234567890",
                                  f"n={BIG}", "9" * 500])
def test_strings_holding_long_runs_of_digits_stay_strings(text: str) -> None:
    assert loads(text_of({"s": text})) == {"s": text}
    slow = loads(f'{{"s": {text_of(text).decode()}, "k": {{{text_of(text).decode()}: 1}}{SLOW}}}'.encode())
    assert slow["s"] == text and slow["k"] == {text: 1}


def test_the_slow_path_gives_what_orjson_gives_but_for_the_big_integers() -> None:
    document = {"a": [1, -2, 3.25, None, True, False, "x\u00e9\U0001f600", {"": {}}, []],
                "k\u00fc": {"nested": [[[]]]}, "esc": "tab\t \"quote\" \\ / \u2028"}
    text = text_of(document)
    slow = loads(text[:-1] + SLOW.encode() + b"}")
    assert isinstance(slow.pop("big"), orjson.Fragment)
    assert slow == document == orjson.loads(text)


REFUSED = [
    pytest.param(b"NaN", id="nan"),
    pytest.param(b"[Infinity]", id="infinity"),
    pytest.param(b"[-Infinity]", id="minus-infinity"),
    pytest.param(b"[1e400]", id="overflowing-float"),
    pytest.param(b"[-1e400]", id="overflowing-negative-float"),
    pytest.param(b'["\\ud800"]', id="lone-high-surrogate"),
    pytest.param(b'["\\udc00x"]', id="lone-low-surrogate"),
    pytest.param(b'["\\ud800\\u0041"]', id="high-surrogate-then-a-letter"),
    pytest.param(b'{"\\ud800": 1}', id="lone-surrogate-in-a-key"),
    pytest.param(b'["\xed\xa0\x80"]', id="surrogate-as-utf8-bytes"),
    pytest.param(b'["\xff"]', id="invalid-utf8"),
    pytest.param(b"\xef\xbb\xbf[1]", id="byte-order-mark"),
    pytest.param(b"[1,]", id="trailing-comma"),
    pytest.param(b"[1] [2]", id="two-documents"),
    pytest.param(b"[01]", id="leading-zero"),
    pytest.param(b'["a\x01"]', id="control-character"),
    pytest.param(b"", id="empty"),
]


@pytest.mark.parametrize("text", REFUSED)
def test_what_orjson_refuses_is_refused_on_either_path(text: bytes) -> None:
    with pytest.raises(orjson.JSONDecodeError):
        orjson.loads(text)
    with pytest.raises(orjson.JSONDecodeError):
        loads(text)
    # The same text with an integer past 64 bits in front (or instead of the value) takes the
    # standard library's parser, which alone would take most of these.
    slow = text.replace(b"[", f"[{BIG}, ".encode(), 1) if text.startswith(b"[") else f"[{BIG}, ".encode() + text
    with pytest.raises(orjson.JSONDecodeError):
        loads(slow)


def test_a_lone_surrogate_in_a_str_is_refused_on_the_slow_path() -> None:
    with pytest.raises(orjson.JSONDecodeError):
        loads(f'["\ud800", {BIG}]')


def test_a_surrogate_pair_is_one_character_on_the_slow_path() -> None:
    assert loads(f'["\\ud83d\\ude00", {BIG}]'.encode())[0] == "\U0001f600"


def test_the_refusal_of_an_overflowing_float_names_where_it_is() -> None:
    with pytest.raises(orjson.JSONDecodeError, match="infinity") as info:
        loads(f'{{"s": "1e400", "n": {BIG}, "f": 1e400}}'.encode())
    assert info.value.pos == len(f'{{"s": "1e400", "n": {BIG}, "f": ')


def test_an_integer_longer_than_numeric_holds_is_refused() -> None:
    assert text_of(loads(b"[" + b"7" * MAX_INTEGER_DIGITS + b"]")) == b"[" + b"7" * MAX_INTEGER_DIGITS + b"]"
    assert text_of(loads(b"-" + b"7" * MAX_INTEGER_DIGITS)) == b"-" + b"7" * MAX_INTEGER_DIGITS
    with pytest.raises(orjson.JSONDecodeError, match=f"more than {MAX_INTEGER_DIGITS} digits"):
        loads(b"[" + b"7" * (MAX_INTEGER_DIGITS + 1) + b"]")


def test_nesting_orjson_refuses_is_refused_with_a_big_integer_inside() -> None:
    with pytest.raises(orjson.JSONDecodeError, match="depth"):
        loads(b"[" * 2000 + str(BIG).encode() + b"]" * 2000)


def test_ordinary_text_takes_orjson_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_slow_path(data: Any) -> Any:
        raise AssertionError(f"took the slow path for {data!r}")

    monkeypatch.setattr(jsontext, "_exact", no_slow_path)
    ordinary = [
        b'{"handler": "h", "payload": {"i": 12345, "f": 2.5, "ok": true, "none": null}}',
        b'{"ns": 1700000000123456789, "u": 9999999999999999999, "neg": -999999999999999999}',  # 19 and 18 digits
        b'{"id": "0b7e4f6a-1234-4d3c-9f00-abcdef012345", "at": "2026-11-30T10:00:00.123456Z"}',
        b"[1e300, 0.30000000000000004]",
    ]
    for text in ordinary:
        assert loads(text) == orjson.loads(text)
        assert loads(text.decode()) == orjson.loads(text)
    assert type(loads(b'{"n": 5}')["n"]) is int and type(loads(b'{"f": 5.5}')["f"]) is float


def test_text_from_the_database_is_parsed_alike() -> None:
    value = loads(f'{{"n": {BIG}, "total": 0}}')
    assert text_of(value) == f'{{"n":{BIG},"total":0}}'.encode()


def test_fragments_are_storable() -> None:
    check_storable(loads(f'{{"n": [{BIG}, {{"m": {-BIG}}}]}}'.encode()))


def test_a_fragment_is_measured_by_its_digits() -> None:
    # Payload sizes are measured as len(orjson.dumps(part)) (the enqueue and schedule services).
    assert len(orjson.dumps(loads(f'{{"n": {BIG}}}'.encode()))) == len(f'{{"n":{BIG}}}')


def test_dumps_writes_python_ints_beyond_64_bits_exactly() -> None:
    written = dumps({"n": BIG, "l": [-BIG, (2**64, True)], "ok": 1})
    assert written == f'{{"n":{BIG},"l":[{-BIG},[{2**64},true]],"ok":1}}'.encode()
    assert dumps({"n": 1, "s": "x"}) == orjson.dumps({"n": 1, "s": "x"})


def test_dumps_still_refuses_what_orjson_cannot_write() -> None:
    with pytest.raises(TypeError):
        dumps({"n": BIG, "o": object()})


# --- properties ----------------------------------------------------------------------------------

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.integers(min_value=2**63).flatmap(lambda n: st.sampled_from([n, -n]))
    | st.floats(allow_nan=False, allow_infinity=False) | st.text(st.characters(exclude_categories=("Cs",))),
    lambda children: st.lists(children, max_size=4)
    | st.dictionaries(st.text(st.characters(exclude_categories=("Cs",))), children, max_size=4),
    max_leaves=16,
)


@settings(max_examples=500)
@given(json_values, st.booleans(), st.booleans())
def test_any_json_comes_back_as_sent(value: Any, ascii_only: bool, as_str: bool) -> None:
    # Python's json writes any int exactly; the client's parser (Python's json) reads it back.
    sent = json.dumps(value, ensure_ascii=ascii_only)
    parsed = loads(sent if as_str else sent.encode())
    assert json.loads(dumps(parsed)) == json.loads(sent)


# Text near JSON: its punctuation, digits, the constants, escapes (surrogates among them) and
# bytes that are not UTF-8.
near_json = st.lists(st.sampled_from([
    "[", "]", "{", "}", ",", ":", '"', " ", "\\", "\\u", "d800", "dc00", "0041", "0", "1", "9", "-", ".", "e",
    "E+", "400", "true", "null", "NaN", "Infinity", "x", "\u00e9", "\U0001f600", "\x01", "\ufeff",
]), max_size=24).map("".join)


@settings(max_examples=2000)
@given(near_json, st.sampled_from([b"", b"\xff", b"\xed\xa0\x80", b"\xc3"]))
@example('"\\ud800"', b"")
@example("1e400", b"")
@example('{"a": 1,}', b"")
def test_the_slow_path_refuses_what_orjson_refuses(fragment: str, junk: bytes) -> None:
    text = fragment.encode("utf-8", "surrogatepass") + junk
    if _LONG_RUN in text.translate(_DIGITS):
        return  # an integer orjson reads as a float (or, from 310 digits, refuses): not comparable
    try:
        expected: Any = orjson.loads(b"[0, " + text + b"]")
    except orjson.JSONDecodeError:
        expected = orjson.JSONDecodeError
    try:
        got: Any = loads(f"[{BIG}, ".encode() + text + b"]")  # the slow path
    except orjson.JSONDecodeError:
        got = orjson.JSONDecodeError
    if expected is orjson.JSONDecodeError or got is orjson.JSONDecodeError:
        assert got is expected, text
    else:
        assert got[1:] == expected[1:]
