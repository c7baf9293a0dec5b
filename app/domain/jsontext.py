"""JSON text → Python values, every integer kept exactly.

orjson parses integers in [-2**63, 2**64 - 1] exactly and larger ones as floats, rounded;
PostgreSQL's jsonb holds them exactly. loads() is orjson.loads unless a scan of the text finds
a run of digits long enough for such an integer; that text is parsed by the standard library's
json instead, and an integer orjson would round becomes an orjson.Fragment of its digits, which
orjson.dumps writes back as they are (into a response, a dispatch body, a statement's JSON).

Both paths refuse what orjson.loads refuses, with orjson.JSONDecodeError: invalid UTF-8, lone
surrogates, NaN and Infinity, numbers that overflow a double (1e400). Integers are the one
difference: orjson takes an integer of 310 digits or more as an overflowing double and refuses
it; jsonb holds it, so it is kept, up to what numeric holds (131072 digits) and refused past that.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

import orjson

INT_MIN, INT_MAX = -(2**63), 2**64 - 1  # the integers orjson parses as int
MAX_INTEGER_DIGITS = 131072  # numeric's limit before the decimal point ("value overflows numeric format")

# The scan: every digit and minus sign as "0", anything else a space. An integer outside
# orjson's range has 20 digits, or a minus sign and 19: a run of 20. One inside a string, a
# float's digits or a date's (digits and minus signs) is a false positive and costs the slow
# path, nothing else. The scan is a translate and a find (a fraction of orjson's own time);
# a regex is several times slower than orjson.
_DIGITS = bytes(48 if 48 <= c <= 57 or c == 45 else 32 for c in range(256))
_LONG_RUN = b"0" * 20
_SHORTEST_SUSPECT = len(_LONG_RUN)


def loads(data: bytes | bytearray | str) -> Any:
    """orjson.loads, but an integer outside [-2**63, 2**64 - 1] comes as an orjson.Fragment of
    its digits, not as a float. Raises orjson.JSONDecodeError for what it refuses."""
    if len(data) < _SHORTEST_SUSPECT:
        return orjson.loads(data)
    raw = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data
    if raw.translate(_DIGITS).find(_LONG_RUN) < 0:
        return orjson.loads(data)
    return _exact(data)


class _Refused(Exception):
    """A token the standard library's parser takes and orjson refuses."""

    def __init__(self, message: str, token: str) -> None:
        super().__init__(message)
        self.message = message
        self.token = token


def _integer(token: str) -> int | orjson.Fragment:
    if len(token) <= 18:  # under 10**18 in magnitude: an int for orjson too
        return int(token)
    if len(token) - token.startswith("-") > MAX_INTEGER_DIGITS:
        raise _Refused(f"integer of more than {MAX_INTEGER_DIGITS} digits", token)
    if len(token) <= 20:  # anything longer is outside the range (and int() of 4300 digits or more, refused)
        value = int(token)
        if INT_MIN <= value <= INT_MAX:
            return value
    return orjson.Fragment(token)


def _float(token: str) -> float:
    value = float(token)
    if math.isinf(value):
        raise _Refused("number is infinity when parsed as double", token)
    return value


def _constant(token: str) -> Any:  # NaN, Infinity, -Infinity
    raise _Refused("unexpected character, expected a JSON value", token)


_DECODER = json.JSONDecoder(parse_int=_integer, parse_float=_float, parse_constant=_constant)
# The standard library decodes a lone \ud800 to a lone surrogate; orjson refuses it.
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
_SURROGATE = re.compile("[\ud800-\udfff]")


def _exact(data: bytes | bytearray | str) -> Any:
    if isinstance(data, str):
        text = data
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise orjson.JSONDecodeError("str is not valid UTF-8: surrogates not allowed", text, exc.start) from None
    else:
        try:
            text = bytes(data).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise orjson.JSONDecodeError(f"str is not valid UTF-8: {exc.reason}", "", exc.start) from None
    try:
        value = _DECODER.decode(text)
    except json.JSONDecodeError as exc:
        raise orjson.JSONDecodeError(exc.msg, exc.doc, exc.pos) from None
    except _Refused as exc:
        raise orjson.JSONDecodeError(exc.message, text, _position(text, exc.token)) from None
    except RecursionError:
        # Nested deeper than this parser recurses (some 900 levels, where orjson stops at 1024
        # and check_storable at 64): orjson's answer, its refusal or its (rounded) value.
        return orjson.loads(data)
    if _SURROGATE_ESCAPE.search(text) is not None:
        _refuse_lone_surrogates(value, text)
    return value


def _position(text: str, token: str) -> int:
    """Where `token` first stands as a value: after the start of the text, `[`, `:` or `,`."""
    at = text.find(token)
    while at >= 0:
        before = at - 1
        while before >= 0 and text[before] in " \t\n\r":
            before -= 1
        if before < 0 or text[before] in "[:,":
            return at
        at = text.find(token, at + 1)
    return 0


def _refuse_lone_surrogates(value: Any, text: str) -> None:
    # A pair (\ud83d\ude00) decodes to one character: a surrogate left in a string was alone.
    stack = [value]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            strings: Any = node.keys()
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
            continue
        elif isinstance(node, str):
            strings = (node,)
        else:
            continue
        for string in strings:
            if _SURROGATE.search(string):
                found = _SURROGATE_ESCAPE.search(text)
                raise orjson.JSONDecodeError("lone surrogate in string", text, found.start() if found else 0)


def dumps(value: Any, option: int | None = None) -> bytes:
    """orjson.dumps, but a Python int outside [-2**63, 2**64 - 1] is written as its digits
    (orjson refuses it). A value orjson takes costs nothing more."""
    try:
        return orjson.dumps(value, option=option)
    except orjson.JSONEncodeError as exc:
        # Any refusal: written again with such ints as fragments, the same error if it was another.
        try:
            exact = _fragments_for_big_ints(value)
        except RecursionError:
            raise exc from None
        return orjson.dumps(exact, option=option)


def _fragments_for_big_ints(value: Any) -> Any:
    if isinstance(value, int) and not isinstance(value, bool):
        return value if INT_MIN <= value <= INT_MAX else orjson.Fragment(str(value))
    if isinstance(value, dict):
        return {key: _fragments_for_big_ints(child) for key, child in value.items()}
    if isinstance(value, (list, tuple)):
        return [_fragments_for_big_ints(child) for child in value]
    return value
