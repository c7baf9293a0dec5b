"""Crafted input over HTTP is a 4xx problem naming the field, never a 500: listing cursors that
decode to the wrong shape or types, cron expressions with digits that are not ASCII, query
numbers in other scripts, and odd bytes in the request headers the service reads."""

from __future__ import annotations

import base64
from collections.abc import AsyncIterator

import httpx
import pytest

from app.db.database import Database
from tests.conftest import RunningServer, problem_fields, register

NOWHERE = "http://127.0.0.1:9/jobs"  # nothing listens on the discard port
FAR_FUTURE = "2999-01-01T00:00:00Z"  # keeps accepted jobs ENQUEUED, never dispatched
TIME = b'"2020-01-01T00:00:00+00:00"'
ID = b'"00000000-0000-0000-0000-000000000000"'
EXECUTION = "00000000-0000-0000-0000-000000000001"


@pytest.fixture
async def api(api_only_server: RunningServer, db: Database) -> AsyncIterator[httpx.AsyncClient]:
    """One API-only server for the module; `db` empties the tables before each test."""
    async with httpx.AsyncClient(base_url=api_only_server.url, timeout=10) as client:
        await register(client, "h", NOWHERE)
        yield client


def b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


@pytest.mark.parametrize("decoded", [
    pytest.param(b"[" + TIME + b", 5]", id="id-a-number"),
    pytest.param(b"[" + TIME + b", true]", id="id-a-bool"),
    pytest.param(b"[" + TIME + b", [" + ID + b"]]", id="id-a-list"),
    pytest.param(b"[" + TIME + b", {}]", id="id-an-object"),
    pytest.param(b"[[" + TIME + b"], " + ID + b"]", id="time-a-list"),
    pytest.param(b"{" + TIME + b": 1, " + ID + b": 2}", id="object-whose-keys-are-a-time-and-id"),
    pytest.param(b'"' + TIME[1:-1][:1] + ID[1:2] + b'"', id="a-two-character-string"),
    pytest.param(b"[" + TIME + b', "' + "١".encode() * 32 + b'"]', id="id-of-arabic-indic-digits"),
    pytest.param(b"[" + TIME + b", " + ID + b", null]", id="three-parts"),
])
async def test_a_cursor_of_the_wrong_shape_is_422_naming_cursor(api: httpx.AsyncClient, decoded: bytes) -> None:
    response = await api.get("/v1/executions", params={"cursor": b64(decoded)})
    assert problem_fields(response, 422) == ["cursor"]


@pytest.mark.parametrize("decoded", [
    pytest.param(b"[1]", id="a-list"),
    pytest.param(b'"log"', id="a-string"),
    pytest.param(b"7", id="a-number"),
    pytest.param(b'{"log": "7"}', id="id-a-string"),
    pytest.param(b'{"log": true}', id="id-a-bool"),
    pytest.param(b'{"log": 7.0}', id="id-a-float"),
    pytest.param(b'{"log": -1}', id="id-negative"),
    pytest.param(b'{"log": 9223372036854775808}', id="id-past-bigint"),
    pytest.param(b'{"log": [7]}', id="id-a-list"),
    pytest.param(b'{"id": 7}', id="another-key"),
])
async def test_a_log_cursor_of_the_wrong_shape_is_422_naming_cursor(api: httpx.AsyncClient, decoded: bytes) -> None:
    response = await api.get(f"/v1/executions/{EXECUTION}/logs", params={"cursor": b64(decoded)})
    assert problem_fields(response, 422) == ["cursor"]


@pytest.mark.parametrize("expression", [
    pytest.param("0 0 ² * *", id="superscript-two-day"),  # str.isdigit(), but int() refuses it: was a 500
    pytest.param("*/² * * * *", id="superscript-two-step"),
    pytest.param("0 ³-5 * * *", id="superscript-three-range"),
    pytest.param("0 0 ١ * *", id="arabic-indic-one"),  # int() reads it as 1: was stored
    pytest.param("0 ５ * * *", id="full-width-five"),
    pytest.param("0 5 * * ſun", id="long-s-in-a-day-name"),  # 'ſun'.upper() == 'SUN'
    pytest.param("0\u20030 * * *", id="em-space-between-fields"),
])
async def test_a_cron_expression_with_characters_other_than_ascii_is_422_naming_cron(
        api: httpx.AsyncClient, expression: str) -> None:
    response = await api.put("/v1/schedules/crafted", json={"cron": expression, "handler": "h"})
    assert problem_fields(response, 422) == ["cron"]
    assert (await api.get("/v1/schedules/crafted")).status_code == 404


async def test_a_cron_number_of_many_digits_is_read_as_a_number(api: httpx.AsyncClient) -> None:
    leading_zeros = await api.put("/v1/schedules/crafted", json={"cron": f"0 0 {'0' * 900}1 * *", "handler": "h"})
    assert leading_zeros.status_code == 201, leading_zeros.text
    assert leading_zeros.json()["cron"] == f"0 0 {'0' * 900}1 * *"
    too_big = await api.put("/v1/schedules/crafted", json={"cron": f"0 0 {'9' * 900} * *", "handler": "h"})
    assert problem_fields(too_big, 422) == ["cron"]


@pytest.mark.parametrize("limit", ["５０", "٥٠", "²", "5e1", "9" * 40])
async def test_a_limit_that_is_not_ascii_digits_is_422_naming_limit(api: httpx.AsyncClient, limit: str) -> None:
    for path in ("/v1/executions", f"/v1/executions/{EXECUTION}/logs"):
        assert problem_fields(await api.get(path, params={"limit": limit}), 422) == ["limit"]


@pytest.mark.parametrize("key", [b"\xb2", b"key\xb2", "١٢".encode(), b"k" * 256])
async def test_an_idempotency_key_of_odd_bytes_is_422_naming_it(api: httpx.AsyncClient, key: bytes) -> None:
    response = await api.post("/v1/jobs", json={"handler": "h", "run_at": FAR_FUTURE},
                              headers=[(b"Idempotency-Key", key)])
    assert problem_fields(response, 422) == ["Idempotency-Key"]


@pytest.mark.parametrize("traceparent", [
    b"\xb2", "00-٤bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01".encode(),
    b"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-\xb2\xb2",
])
async def test_a_traceparent_of_odd_bytes_is_ignored(api: httpx.AsyncClient, traceparent: bytes) -> None:
    for path, body in (("/v1/jobs", {"handler": "h", "run_at": FAR_FUTURE}),
                       ("/v1/jobs/batch", {"jobs": [{"handler": "h", "run_at": FAR_FUTURE}]})):
        response = await api.post(path, json=body, headers=[(b"traceparent", traceparent)])
        assert response.status_code == 201, response.text
        created = response.json()
        for execution in created.get("items", [created]):
            assert "traceparent" not in ((execution.get("metadata") or {}).get("context") or {})


@pytest.mark.parametrize("authorization", [
    b"Bearer \xb2", b"Bearer 1.\xb2", "Bearer ١.x".encode(), b"\xb2 x", b"Bearer",
])
async def test_a_callback_token_of_odd_bytes_is_refused_with_a_4xx(api: httpx.AsyncClient,
                                                                    authorization: bytes) -> None:
    response = await api.post(f"/v1/executions/{EXECUTION}/complete", json={"outcome": "succeeded"},
                              headers=[(b"authorization", authorization)])
    assert 400 <= response.status_code < 500, response.text
    assert response.headers["content-type"] == "application/problem+json"


@pytest.mark.parametrize("key", ["a[²]", "a[١]", "a[0]"])
async def test_an_unstorable_value_under_a_key_that_looks_like_an_index_is_422(api: httpx.AsyncClient,
                                                                              key: str) -> None:
    """The 422 names where the NUL is; a key with other digits than ASCII in brackets is a name."""
    response = await api.post("/v1/jobs", json={"handler": "h", "run_at": FAR_FUTURE, "payload": {key: "x\x00"}})
    [field] = problem_fields(response, 422)
    assert field.startswith("payload.a")
