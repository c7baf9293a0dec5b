"""The SDK's one JSON encoder and decoder: every body the client sends, every job the outbox
writes, every document the `jobwire` command prints, and every answer read back.

What it writes is what Jobwire stores without a refusal: integers of any size with all their
digits (the interpreter's 4,300-digit limit on int ↔ str is worked around, not hit); no NaN or
Infinity, which JSON has no form for (refused here with a ValueError naming where, before
anything is sent); datetimes as RFC 3339, and a naive one refused, since guessing its time zone
would move the job; dates, UUIDs and Decimals as the API reads them. Keys must be strings: a
JSON object has no other kind, and `{1: …, "1": …}` would be one key twice.

Written by hand rather than through `json.dumps`, whose C encoder cannot be told how to write a
large integer; strings still go through the standard library's escaping.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from datetime import date, datetime
from decimal import Decimal
from json.encoder import encode_basestring
from typing import Any
from uuid import UUID

# int ↔ str conversions stay below the interpreter's default limit (sys.int_max_str_digits, 4300);
# longer numbers are split into pieces of at most this many digits.
_PIECE_DIGITS = 1000
_PIECE_BITS = 3000  # an int of at most this many bits has at most 904 digits


def dumps(value: Any, *, where: str = "", indent: int | None = None) -> str:
    """`value` as JSON text. `where` names it in a refusal (`jobs` gives `jobs[3].payload.amount`);
    `indent` spaces per level for people, None for the compact form sent on the wire."""
    out: list[str] = []
    _write(value, where, out, indent, 0)
    return "".join(out)


def loads(text: str | bytes) -> Any:
    """JSON text as Python values, as strictly as `dumps` writes: NaN, Infinity and numbers that
    overflow a float (`1e400`) raise ValueError; integers of any length are read exactly."""
    return json.loads(text, parse_constant=_no_constant, parse_float=_finite_float, parse_int=_int_of)


def _write(value: Any, where: str, out: list[str], indent: int | None, level: int) -> None:
    if value is None:
        out.append("null")
    elif value is True or value is False:
        out.append("true" if value else "false")
    elif isinstance(value, str):
        out.append(_string(value, where))
    elif isinstance(value, int):
        out.append(_int_text(int(value)))  # int(): an IntEnum writes its number, not its repr
    elif isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"{where or 'the value'}: {value!r} has no JSON form "
                             "(NaN and Infinity are not JSON numbers, and Jobwire refuses them)")
        out.append(float.__repr__(value))
    elif isinstance(value, datetime):
        if value.utcoffset() is None:
            raise ValueError(f"{where or 'the value'}: datetime {value.isoformat()} has no time zone; "
                             "give it one (e.g. datetime.now(UTC)), RFC 3339 needs an offset")
        out.append(_string(value.isoformat(), where))
    elif isinstance(value, date):
        out.append(_string(value.isoformat(), where))
    elif isinstance(value, UUID):
        out.append(_string(str(value), where))
    elif isinstance(value, Decimal):
        if not value.is_finite():
            raise ValueError(f"{where or 'the value'}: Decimal {value} has no JSON form")
        out.append(str(value))
    elif isinstance(value, Mapping):
        _object(value, where, out, indent, level)
    elif isinstance(value, (list, tuple)):
        _array(value, where, out, indent, level)
    else:
        raise TypeError(f"{where or 'the value'}: {type(value).__name__} is not JSON serialisable")


def _object(value: Mapping[Any, Any], where: str, out: list[str], indent: int | None, level: int) -> None:
    if not value:
        out.append("{}")
        return
    inner, close = _breaks(indent, level)
    out.append("{")
    for i, (key, item) in enumerate(value.items()):
        if not isinstance(key, str):
            raise TypeError(f"{where or 'the value'}: key {key!r} is not a string, and JSON object keys are")
        out.append(("," if i else "") + inner)
        out.append(_string(key, where))
        out.append(": " if indent is not None else ":")
        _write(item, f"{where}.{key}" if where else key, out, indent, level + 1)
    out.append(close + "}")


def _array(value: list[Any] | tuple[Any, ...], where: str, out: list[str], indent: int | None, level: int) -> None:
    if not value:
        out.append("[]")
        return
    inner, close = _breaks(indent, level)
    out.append("[")
    for i, item in enumerate(value):
        out.append(("," if i else "") + inner)
        _write(item, f"{where}[{i}]", out, indent, level + 1)
    out.append(close + "]")


def _breaks(indent: int | None, level: int) -> tuple[str, str]:
    if indent is None:
        return "", ""
    return "\n" + " " * (indent * (level + 1)), "\n" + " " * (indent * level)


def _string(value: str, where: str) -> str:
    if not value.isascii():
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            raise ValueError(f"{where or 'the value'}: the text holds a lone surrogate, which UTF-8 "
                             "cannot carry") from None
    return encode_basestring(value)


def _int_text(n: int) -> str:
    """All the digits of `n`, however many."""
    if n.bit_length() <= _PIECE_BITS:
        return int.__repr__(n)
    if n < 0:
        return "-" + _int_text(-n)
    half = int(n.bit_length() * 0.30103) // 2  # about half its digits
    high, low = divmod(n, 10**half)
    return _int_text(high) + _int_text(low).zfill(half)


def _int_of(digits: str) -> int:
    """JSON's integer text as an int, however long."""
    if len(digits) <= _PIECE_DIGITS:
        return int(digits)
    if digits[0] == "-":
        return -_int_of(digits[1:])
    half = len(digits) // 2
    scale: int = 10 ** (len(digits) - half)
    return _int_of(digits[:half]) * scale + _int_of(digits[half:])


def _finite_float(text: str) -> float:
    number = float(text)
    if not math.isfinite(number):
        raise ValueError(f"{text} overflows a float: Jobwire refuses it as it does Infinity")
    return number


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")
