"""The SDK's one JSON encoder (jobwire._json), for client bodies, the outbox and the command's
output alike: what it writes reads back the same (integers of any size exact), NaN and Infinity
are refused before anything is sent with a ValueError naming where, datetimes are RFC 3339 and a
naive one refused; and no other encoder is left in the client or the command."""

from __future__ import annotations

import json
import math
import re
from datetime import UTC, date, datetime, timedelta, timezone
from decimal import Decimal
from enum import IntEnum, StrEnum
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from jobwire import outbox
from jobwire._json import dumps, loads

SDK = Path(__file__).resolve().parents[2] / "sdk" / "python" / "src" / "jobwire"

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.integers(-(10**5000), 10**5000)
    | st.floats(allow_nan=False, allow_infinity=False) | st.text(st.characters(exclude_categories=("Cs",))),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(), children, max_size=4),
    max_leaves=12,
)


@given(json_values)
@example(10**5000)  # past the interpreter's 4,300-digit limit on int <-> str
@example(-(10**9000) + 7)
@example({"k": [2**64, -(2**63) - 1, 0.1, -0.0, "é\u2028\"\\"]})
def test_what_dumps_writes_reads_back_the_same(value: Any) -> None:
    assert loads(dumps(value)) == value
    assert loads(dumps(value, indent=2)) == value


@given(st.recursive(st.integers(-10, 10) | st.text(max_size=3) | st.floats(allow_nan=False, allow_infinity=False),
                    lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=3), c, max_size=3),
                    max_leaves=8))
def test_within_the_standard_librarys_reach_it_writes_what_json_dumps_writes(value: Any) -> None:
    assert dumps(value) == json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    assert dumps(value, indent=2) == json.dumps(value, indent=2, ensure_ascii=False)


@pytest.mark.parametrize(("value", "where"), [
    ({"amount": math.nan}, "payload.amount"),
    ({"rows": [1, {"x": math.inf}]}, "payload.rows[1].x"),
    ([-math.inf], "payload[0]"),
    ({"d": Decimal("NaN")}, "payload.d"),
])
def test_nan_and_infinity_are_refused_naming_where(value: Any, where: str) -> None:
    with pytest.raises(ValueError, match=rf"^{re.escape(where)}: .*no JSON form"):
        dumps(value, where="payload")


def test_times_uuids_decimals_and_enums_are_written_as_the_api_reads_them() -> None:
    class Level(IntEnum):
        HIGH = 3

    class Colour(StrEnum):
        RED = "red"

    paris = timezone(timedelta(hours=1))
    sent = dumps({"at": datetime(2026, 12, 1, 8, 30, tzinfo=paris), "on": date(2026, 12, 1),
                  "id": UUID(int=1), "price": Decimal("19.90"), "level": Level.HIGH, "colour": Colour.RED,
                  "tuple": (1, 2)})
    assert sent == ('{"at":"2026-12-01T08:30:00+01:00","on":"2026-12-01","id":"00000000-0000-0000-0000-000000000001",'
                    '"price":19.90,"level":3,"colour":"red","tuple":[1,2]}')
    with pytest.raises(ValueError, match=r"^run_at: datetime 2026-12-01T08:30:00 has no time zone"):
        dumps({"run_at": datetime(2026, 12, 1, 8, 30)})
    assert dumps(datetime(2026, 12, 1, tzinfo=UTC)) == '"2026-12-01T00:00:00+00:00"'


def test_what_json_cannot_say_is_refused_naming_where() -> None:
    with pytest.raises(TypeError, match=r"^payload: key 1 is not a string"):
        dumps({1: "a"}, where="payload")
    with pytest.raises(TypeError, match=r"^payload\.s: set is not JSON serialisable"):
        dumps({"s": {1}}, where="payload")
    with pytest.raises(ValueError, match=r"^payload\.t: the text holds a lone surrogate"):
        dumps({"t": "\ud800"}, where="payload")


def test_loads_refuses_nan_infinity_and_overflowing_numbers_and_reads_any_integer() -> None:
    for text in ("NaN", "[Infinity]", '{"a": -Infinity}', "1e400"):
        with pytest.raises(ValueError):
            loads(text)
    assert loads("1" * 5000) == int("1" * 1000) * 10**4000 + int("1" * 4000)


def test_the_outbox_refuses_nan_naming_the_job_before_touching_the_connection() -> None:
    with pytest.raises(ValueError, match=r"^jobs\[1\]\.payload\.x: "):
        outbox.enqueue_many(object(), [{"handler": "h"}, {"handler": "h", "payload": {"x": math.nan}}])


def test_no_other_json_encoder_is_left_in_the_client_or_the_command() -> None:
    sources = [path for path in SDK.rglob("*.py") if "handler" not in path.parts and path.name != "_json.py"]
    others = [f"{path.relative_to(SDK)}:{n}" for path in sources
              for n, line in enumerate(path.read_text().splitlines(), 1) if re.search(r"\bjson\.dumps?\b", line)]
    assert others == []
