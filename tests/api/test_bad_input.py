"""Bad input is refused with problem+json naming the field, and nothing is stored (DESIGN §4).

No input yields a 500: every odd body, query and path below answers a 4xx problem.
"""

from __future__ import annotations

import asyncio
import base64
from collections.abc import AsyncIterator
from typing import Any

import httpx
import orjson
import pytest

from app.db.database import Database
from tests.conftest import RunningServer, problem_fields, register, settings_for, start_server

PROBLEM = "application/problem+json"
NOWHERE = "http://127.0.0.1:9/jobs"  # nothing listens on the discard port
FAR_FUTURE = "2999-01-01T00:00:00Z"  # keeps accepted jobs ENQUEUED, never dispatched
SEVEN_DAYS = 7 * 86400


async def assert_nothing_stored(api: httpx.AsyncClient) -> None:
    listing = await api.get("/v1/executions")
    assert listing.status_code == 200
    assert listing.json() == {"items": [], "next_cursor": None}


async def listed(api: httpx.AsyncClient) -> list[str]:
    return [e["id"] for e in (await api.get("/v1/executions", params={"limit": 500})).json()["items"]]


@pytest.fixture
async def api(api_only_server: RunningServer, db: Database) -> AsyncIterator[httpx.AsyncClient]:
    """Overrides conftest's `api` with one server for the whole module (a start per test would
    dominate the run time); `db` still empties the tables before each test. Refused input
    needs no dispatcher."""
    async with httpx.AsyncClient(base_url=api_only_server.url, timeout=10) as client:
        yield client


@pytest.fixture
async def h(api: httpx.AsyncClient) -> AsyncIterator[str]:
    await register(api, "h", NOWHERE)
    yield "h"


def job(**fields: Any) -> dict[str, Any]:
    return {"handler": "h", "run_at": FAR_FUTURE, **fields}


# --- one job: schema violations ---------------------------------------------------------

@pytest.mark.parametrize(("body", "field"), [
    pytest.param(job(priority="5"), "priority", id="priority-as-string"),
    pytest.param(job(priority=True), "priority", id="priority-as-bool"),
    pytest.param(job(priority=5.0), "priority", id="priority-as-float"),
    pytest.param(job(stateful="yes"), "stateful", id="stateful-as-string"),
    pytest.param(job(max_attempts=1.5), "max_attempts", id="max-attempts-fraction"),
    pytest.param(job(colour="red"), "colour", id="unknown-field"),
    pytest.param(job(priority=2**31), "priority", id="priority-above-int32"),
    pytest.param(job(priority=-(2**31) - 1), "priority", id="priority-below-int32"),
    pytest.param(job(max_attempts=0), "max_attempts", id="max-attempts-zero"),
    pytest.param(job(timeout_seconds=0), "timeout_seconds", id="timeout-zero"),
    pytest.param(job(timeout_seconds=SEVEN_DAYS + 1), "timeout_seconds", id="timeout-over-seven-days"),
    pytest.param(job(max_duration_seconds=-1), "max_duration_seconds", id="max-duration-negative"),
    pytest.param(job(max_duration_seconds=SEVEN_DAYS + 1), "max_duration_seconds", id="max-duration-over-seven-days"),
    pytest.param({"handler": "h", "delay_seconds": -1}, "delay_seconds", id="negative-delay"),
    pytest.param(job(run_at="2030-01-01T00:00:00"), "run_at", id="run-at-without-zone"),
    pytest.param(job(run_at=1893456000), "run_at", id="run-at-as-number"),
    pytest.param(job(run_at="tomorrow"), "run_at", id="run-at-not-a-time"),
    pytest.param(job(job_id="has space"), "job_id", id="job-id-with-space"),
    pytest.param(job(queue="-starts-with-dash"), "queue", id="queue-starting-with-dash"),
    pytest.param(job(job_id="j" * 256), "job_id", id="job-id-256-chars"),
    pytest.param(job(queue=""), "queue", id="queue-empty"),
    pytest.param(job(idempotency_key="a/b"), "idempotency_key", id="idempotency-key-with-slash"),
    pytest.param(job(handler="bad name"), "handler", id="handler-name-with-space"),
    pytest.param({"payload": {}}, "handler", id="handler-missing"),
    pytest.param(job(parameters=[1, 2]), "parameters", id="parameters-not-an-object"),
    pytest.param(job(metadata="text"), "metadata", id="metadata-not-an-object"),
    pytest.param(job(payload={"text": "a\u0000b"}), "payload.text", id="nul-in-payload-string"),
    pytest.param(job(payload={"a\u0000": 1}), "payload", id="nul-in-payload-key"),
    pytest.param(job(metadata={"tags": ["ok", "\u0000"]}), "metadata.tags[1]", id="nul-in-metadata-list"),
    pytest.param(job(parameters={"p": "\u0000"}), "parameters.p", id="nul-in-parameters"),
])
async def test_invalid_job_is_422_naming_the_field_and_stores_nothing(
        api: httpx.AsyncClient, h: str, body: dict[str, Any], field: str) -> None:
    response = await api.post("/v1/jobs", json=body)
    assert field in problem_fields(response, 422)
    await assert_nothing_stored(api)


async def test_run_at_without_zone_is_422_naming_run_at(api: httpx.AsyncClient, h: str) -> None:
    response = await api.post("/v1/jobs", json={"handler": h, "run_at": "2030-01-01T08:00:00"})
    assert problem_fields(response, 422) == ["run_at"]
    await assert_nothing_stored(api)


async def test_run_at_and_delay_seconds_together_are_422_naming_the_field(api: httpx.AsyncClient, h: str) -> None:
    response = await api.post("/v1/jobs", json={"handler": h, "run_at": FAR_FUTURE, "delay_seconds": 5})
    assert problem_fields(response, 422) == ["delay_seconds"]
    batch = await api.post("/v1/jobs/batch", json={"jobs": [job(), job(delay_seconds=5)]})
    assert problem_fields(batch, 422) == ["jobs[1].delay_seconds"]
    await assert_nothing_stored(api)


async def test_unknown_handler_is_422_naming_handler(api: httpx.AsyncClient) -> None:
    response = await api.post("/v1/jobs", json={"handler": "nobody", "payload": {}})
    assert problem_fields(response, 422) == ["handler"]
    assert "nobody" in response.json()["errors"][0]["message"]
    await assert_nothing_stored(api)


@pytest.mark.parametrize(("run_at", "expected"), [
    pytest.param("0001-01-01T00:00:00+14:00", 422, id="before-year-1-in-utc"),
    pytest.param("9999-12-31T23:59:59-14:00", 422, id="after-year-9999-in-utc"),
    pytest.param("2030-06-01T12:00:00+02:00", 201, id="offset-zone"),
])
async def test_run_at_is_accepted_only_when_representable_in_utc(
        api: httpx.AsyncClient, h: str, run_at: str, expected: int) -> None:
    response = await api.post("/v1/jobs", json={"handler": h, "run_at": run_at})
    if expected == 201:
        assert response.status_code == 201, response.text
        assert response.json()["scheduled_at"] == "2030-06-01T10:00:00Z"
    else:
        assert problem_fields(response, 422) == ["run_at"]
        await assert_nothing_stored(api)


# --- JSON that PostgreSQL cannot store, sent as raw bytes ---------------------------------

@pytest.mark.parametrize("raw", [
    pytest.param(b'{"handler": "h",', id="truncated"),
    pytest.param(b"{'handler': 'h'}", id="single-quotes"),
    pytest.param(b'{"handler": "h", "payload": NaN}', id="nan"),
    pytest.param(b'{"handler": "h", "payload": Infinity}', id="infinity"),
    pytest.param(b'{"handler": "h", "payload": -Infinity}', id="minus-infinity"),
    pytest.param(b'{"handler": "h", "payload": 1e400}', id="overflowing-number"),
    pytest.param(b'{"handler": "h", "payload": "\\ud800"}', id="lone-surrogate-escape"),
    pytest.param(b'{"handler": "h", "payload": "\\udc00x"}', id="lone-low-surrogate-escape"),
    pytest.param(b'{"handler": "h", "payload": "\xed\xa0\x80"}', id="surrogate-as-utf8-bytes"),
    pytest.param(b'{"handler": "h", "payload": "\xff"}', id="invalid-utf8"),
    pytest.param(b'{"handler": "h"} trailing', id="trailing-garbage"),
])
async def test_json_postgresql_cannot_store_is_422(api: httpx.AsyncClient, h: str, raw: bytes) -> None:
    response = await api.post("/v1/jobs", content=raw, headers={"content-type": "application/json"})
    assert problem_fields(response, 422) == ["body"]
    await assert_nothing_stored(api)


async def test_nul_escape_sent_raw_is_422_naming_the_key(api: httpx.AsyncClient, h: str) -> None:
    raw = b'{"handler": "h", "run_at": "2999-01-01T00:00:00Z", "payload": {"k\\u0000": "v"}}'
    response = await api.post("/v1/jobs", content=raw, headers={"content-type": "application/json"})
    assert problem_fields(response, 422) == ["payload"]
    await assert_nothing_stored(api)


def nested_body(levels: int) -> bytes:
    """A request document `levels` deep: the body object holding a payload of nested lists."""
    inner = levels - 1
    return b'{"handler": "h", "run_at": "2999-01-01T00:00:00Z", "payload": ' + b"[" * inner + b"]" * inner + b"}"


async def test_nesting_deeper_than_64_levels_is_422(api: httpx.AsyncClient, h: str) -> None:
    response = await api.post("/v1/jobs", content=nested_body(65), headers={"content-type": "application/json"})
    [field] = problem_fields(response, 422)
    assert field.startswith("payload[0]")
    await assert_nothing_stored(api)


async def test_nesting_of_64_levels_is_accepted(api: httpx.AsyncClient, h: str) -> None:
    response = await api.post("/v1/jobs", content=nested_body(64), headers={"content-type": "application/json"})
    assert response.status_code == 201, response.text
    payload = response.json()["payload"]
    depth = 0
    while isinstance(payload, list):
        depth += 1
        payload = payload[0] if payload else None
    assert depth == 63


async def test_very_deep_nesting_is_422_not_500(api: httpx.AsyncClient, h: str) -> None:
    response = await api.post("/v1/jobs", content=nested_body(5000), headers={"content-type": "application/json"})
    problem_fields(response, 422)
    await assert_nothing_stored(api)


async def test_names_of_255_characters_are_accepted(api: httpx.AsyncClient, h: str) -> None:
    name = "a" + "b" * 254
    response = await api.post("/v1/jobs", json=job(job_id=name, queue=name, idempotency_key=name))
    assert response.status_code == 201, response.text
    assert response.json()["job_id"] == name and response.json()["queue"] == name


# --- odd bodies -------------------------------------------------------------------------

@pytest.mark.parametrize(("raw", "content_type", "field"), [
    pytest.param(b"", "application/json", "body", id="empty"),
    pytest.param(b"[]", "application/json", "body", id="array"),
    pytest.param(b"null", "application/json", "body", id="null"),
    pytest.param(b'"job"', "application/json", "body", id="string"),
    pytest.param(b"42", "application/json", "body", id="number"),
    pytest.param(b"{}", "application/json", "handler", id="empty-object"),
])
async def test_odd_bodies_on_post_jobs_are_422(
        api: httpx.AsyncClient, h: str, raw: bytes, content_type: str | None, field: str) -> None:
    headers = {"content-type": content_type} if content_type else {}
    response = await api.post("/v1/jobs", content=raw, headers=headers)
    assert problem_fields(response, 422) == [field]
    await assert_nothing_stored(api)


@pytest.mark.parametrize(("raw", "content_type"), [
    pytest.param(b'{"handler": "h"}', "text/plain", id="text-plain"),
    pytest.param(b'{"handler": "h"}', "application/x-www-form-urlencoded", id="form-content-type"),
    pytest.param(b"handler=h", "application/x-www-form-urlencoded", id="form-body"),
    # A body without a content type is not declared JSON either: 415, not a guess.
    pytest.param(b'{"handler": "h"}', None, id="no-content-type"),
])
async def test_a_body_that_is_not_sent_as_json_on_post_jobs_is_415(
        api: httpx.AsyncClient, h: str, raw: bytes, content_type: str | None) -> None:
    headers = {"content-type": content_type} if content_type else {}
    response = await api.post("/v1/jobs", content=raw, headers=headers)
    assert problem_fields(response, 415) == []
    assert "application/json" in response.json()["detail"]
    await assert_nothing_stored(api)


# --- batches ----------------------------------------------------------------------------

@pytest.mark.parametrize("count", [0, 1001])
async def test_batch_outside_1_to_1000_items_is_422_naming_jobs(api: httpx.AsyncClient, h: str, count: int) -> None:
    response = await api.post("/v1/jobs/batch", json={"jobs": [job() for _ in range(count)]})
    assert problem_fields(response, 422) == ["jobs"]
    await assert_nothing_stored(api)


@pytest.mark.parametrize(("bad_item", "field"), [
    pytest.param(job(priority="high"), "jobs[3].priority", id="schema"),
    pytest.param(job(handler="nobody"), "jobs[3].handler", id="unknown-handler"),
    pytest.param(job(payload={"t": "\u0000"}), "jobs[3].payload.t", id="unstorable"),
    pytest.param(job(extra=1), "jobs[3].extra", id="unknown-field"),
])
async def test_one_invalid_batch_item_rejects_the_whole_batch_naming_it(
        api: httpx.AsyncClient, h: str, bad_item: dict[str, Any], field: str) -> None:
    jobs = [job(job_id=f"j{i}") for i in range(5)]
    jobs[3] = bad_item
    response = await api.post("/v1/jobs/batch", json={"jobs": jobs})
    assert problem_fields(response, 422) == [field]
    await assert_nothing_stored(api)


async def test_batch_with_an_unknown_handler_names_jobs_1_handler(api: httpx.AsyncClient, h: str) -> None:
    response = await api.post("/v1/jobs/batch", json={"jobs": [job(), job(handler="ghost"), job()]})
    assert problem_fields(response, 422) == ["jobs[1].handler"]
    await assert_nothing_stored(api)


@pytest.mark.parametrize("body", [
    pytest.param(None, id="null"),
    pytest.param([], id="array"),
    pytest.param({}, id="no-jobs"),
    pytest.param({"jobs": None}, id="jobs-null"),
    pytest.param({"jobs": [None]}, id="item-null"),
    pytest.param({"jobs": {"0": {"handler": "h"}}}, id="jobs-object"),
])
async def test_odd_batch_bodies_are_422(api: httpx.AsyncClient, h: str, body: Any) -> None:
    response = await api.post("/v1/jobs/batch", content=orjson.dumps(body),
                              headers={"content-type": "application/json"})
    assert problem_fields(response, 422)
    await assert_nothing_stored(api)


# --- paths and queries ------------------------------------------------------------------

@pytest.mark.parametrize(("method", "path"), [
    ("GET", "/v1/executions/not-a-uuid"),
    ("GET", "/v1/executions/123"),
    ("POST", "/v1/executions/not-a-uuid/cancel"),
    ("POST", "/v1/executions/not-a-uuid/retry"),
])
async def test_non_uuid_execution_id_is_422_naming_execution_id(
        api: httpx.AsyncClient, method: str, path: str) -> None:
    response = await api.request(method, path)
    assert problem_fields(response, 422) == ["execution_id"]


def b64(value: bytes) -> str:
    return base64.urlsafe_b64encode(value).decode().rstrip("=")


@pytest.mark.parametrize("cursor", [
    pytest.param("garbage!", id="not-base64"),
    pytest.param("é", id="non-ascii"),
    pytest.param(b64(b"not json"), id="not-json"),
    pytest.param(b64(b"\xff\xfe"), id="not-utf8"),
    pytest.param(b64(b"42"), id="not-a-pair"),
    pytest.param(b64(b'{"a": 1, "b": 2}'), id="object"),
    pytest.param(b64(b"[1, 2]"), id="numbers"),
    pytest.param(b64(b'["2024-01-01T00:00:00", "00000000-0000-0000-0000-000000000000"]'), id="naive-time"),
    pytest.param(b64(b'["2024-01-01T00:00:00+00:00", "not-a-uuid"]'), id="bad-uuid"),
    pytest.param(b64(b'["0001-01-01T00:00:00+14:00", "00000000-0000-0000-0000-000000000000"]'),
                 id="time-before-year-1-in-utc"),
    pytest.param("a" * 201, id="too-long"),
])
async def test_bad_cursor_is_422_naming_cursor(api: httpx.AsyncClient, cursor: str) -> None:
    response = await api.get("/v1/executions", params={"cursor": cursor})
    assert problem_fields(response, 422) == ["cursor"]


@pytest.mark.parametrize(("params", "field"), [
    pytest.param({"limit": "0"}, "limit", id="limit-0"),
    pytest.param({"limit": "501"}, "limit", id="limit-501"),
    pytest.param({"limit": "ten"}, "limit", id="limit-not-a-number"),
    pytest.param({"state": "RUNNING"}, "state", id="unknown-state"),
    pytest.param({"state": "enqueued"}, "state", id="lowercase-state"),
    pytest.param({"queue": "-q"}, "queue", id="bad-queue"),
    pytest.param({"handler": "a b"}, "handler", id="bad-handler"),
    pytest.param({"job_id": "x" * 256}, "job_id", id="job-id-too-long"),
])
async def test_bad_listing_query_is_422_naming_the_parameter(
        api: httpx.AsyncClient, params: dict[str, str], field: str) -> None:
    response = await api.get("/v1/executions", params=params)
    assert problem_fields(response, 422) == [field]


async def test_invalid_idempotency_key_header_is_422(api: httpx.AsyncClient, h: str) -> None:
    response = await api.post("/v1/jobs", json=job(), headers={"Idempotency-Key": "has space"})
    assert problem_fields(response, 422) == ["Idempotency-Key"]
    await assert_nothing_stored(api)


# --- size limits ------------------------------------------------------------------------

@pytest.fixture(scope="module")
async def small_server(database_url: str) -> AsyncIterator[RunningServer]:
    """A server with tiny limits: 100 bytes of job data, 1000 bytes of request body."""
    server = await start_server(settings_for(database_url, max_payload_bytes=100, max_request_bytes=1000),
                                background=False)
    yield server
    await server.stop()


@pytest.fixture
async def small(small_server: RunningServer, db: Database) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=small_server.url, timeout=10) as client:
        await register(client, "h", NOWHERE)
        yield client


async def test_job_data_over_max_payload_bytes_is_413_naming_the_job(small: httpx.AsyncClient) -> None:
    response = await small.post("/v1/jobs", json=job(payload="x" * 120))
    assert problem_fields(response, 413) == ["job"]
    await assert_nothing_stored(small)


async def test_payload_parameters_and_metadata_count_together(small: httpx.AsyncClient) -> None:
    parts = {"payload": "p" * 30, "parameters": {"q": "q" * 30}, "metadata": {"m": "m" * 30}}
    response = await small.post("/v1/jobs", json=job(**parts))
    assert problem_fields(response, 413) == ["job"]
    await assert_nothing_stored(small)
    ok = await small.post("/v1/jobs", json=job(payload="p" * 20, parameters={"q": "q"}, metadata={"m": "m"}))
    assert ok.status_code == 201, ok.text


async def test_batch_item_over_max_payload_bytes_is_413_naming_it(small: httpx.AsyncClient) -> None:
    jobs = [job(payload=i) for i in range(4)]
    jobs[2] = job(payload="x" * 120)
    response = await small.post("/v1/jobs/batch", json={"jobs": jobs})
    assert problem_fields(response, 413) == ["jobs[2]"]
    await assert_nothing_stored(small)


async def test_body_over_max_request_bytes_with_content_length_is_413(small: httpx.AsyncClient) -> None:
    body = orjson.dumps({"jobs": [job(payload=i) for i in range(40)]})
    assert len(body) > 1000
    response = await small.post("/v1/jobs/batch", content=body, headers={"content-type": "application/json"})
    problem_fields(response, 413)
    await assert_nothing_stored(small)


async def test_body_over_max_request_bytes_sent_chunked_is_413(small: httpx.AsyncClient) -> None:
    body = orjson.dumps({"jobs": [job(payload=i) for i in range(40)]})

    async def chunks() -> AsyncIterator[bytes]:
        for start in range(0, len(body), 100):
            yield body[start:start + 100]

    response = await small.post("/v1/jobs/batch", content=chunks(), headers={"content-type": "application/json"})
    assert "content-length" not in response.request.headers
    assert response.request.headers["transfer-encoding"] == "chunked"
    problem_fields(response, 413)
    await assert_nothing_stored(small)


async def test_body_whose_last_chunk_passes_max_request_bytes_is_413(small: httpx.AsyncClient) -> None:
    # A valid job, small enough (max_payload_bytes=100) but padded with JSON whitespace past
    # max_request_bytes=1000 in its final chunk: refused by size, never stored.
    body = b'{"handler": "h",' + b" " * 1000 + f'"run_at": "{FAR_FUTURE}"}}'.encode()
    half = len(body) // 2
    assert half < 1000 < len(body)

    async def chunks() -> AsyncIterator[bytes]:
        yield body[:half]
        yield body[half:]

    response = await small.post("/v1/jobs", content=chunks(), headers={"content-type": "application/json"})
    problem_fields(response, 413)
    await assert_nothing_stored(small)


async def test_body_under_max_request_bytes_sent_chunked_is_accepted(small: httpx.AsyncClient) -> None:
    body = orjson.dumps(job(payload="fits"))

    async def chunks() -> AsyncIterator[bytes]:
        for start in range(0, len(body), 10):
            yield body[start:start + 10]

    response = await small.post("/v1/jobs", content=chunks(), headers={"content-type": "application/json"})
    assert response.status_code == 201, response.text


async def test_any_route_refuses_a_body_over_max_request_bytes(small: httpx.AsyncClient) -> None:
    response = await small.put("/v1/handlers/big", json={"url": "http://127.0.0.1:9/" + "a" * 1200})
    problem_fields(response, 413)
    assert (await small.get("/v1/handlers/big")).status_code == 404


# --- idempotency keys -------------------------------------------------------------------

async def test_repeated_body_key_with_the_same_body_is_200_with_the_first_execution(
        api: httpx.AsyncClient, h: str) -> None:
    body = job(payload={"n": 1}, idempotency_key="order-1")
    first = await api.post("/v1/jobs", json=body)
    assert first.status_code == 201, first.text
    again = await api.post("/v1/jobs", json=body)
    assert again.status_code == 200, again.text
    assert again.json()["id"] == first.json()["id"]
    assert len((await api.get("/v1/executions")).json()["items"]) == 1


async def test_repeated_header_key_with_the_same_body_is_200_with_the_first_execution(
        api: httpx.AsyncClient, h: str) -> None:
    first = await api.post("/v1/jobs", json=job(payload=[1]), headers={"Idempotency-Key": "order-2"})
    assert first.status_code == 201, first.text
    again = await api.post("/v1/jobs", json=job(payload=[1]), headers={"Idempotency-Key": "order-2"})
    assert again.status_code == 200 and again.json()["id"] == first.json()["id"]
    # The key is not part of the body's fingerprint: header and body keys are one key.
    in_body = await api.post("/v1/jobs", json=job(payload=[1], idempotency_key="order-2"))
    assert in_body.status_code == 200 and in_body.json()["id"] == first.json()["id"]


async def test_same_body_means_same_request_after_defaults_and_time_zones(api: httpx.AsyncClient, h: str) -> None:
    first = await api.post("/v1/jobs", json={"handler": "h", "run_at": "2999-01-01T00:00:00Z", "idempotency_key": "k"})
    assert first.status_code == 201, first.text
    spelled_out = {"handler": "h", "run_at": "2999-01-01T01:00:00+01:00", "idempotency_key": "k",
                   "queue": "default", "priority": 0, "max_attempts": 5, "stateful": False}
    again = await api.post("/v1/jobs", json=spelled_out)
    assert again.status_code == 200, again.text
    assert again.json()["id"] == first.json()["id"]


@pytest.mark.parametrize("change", [
    pytest.param({"payload": {"n": 2}}, id="payload"),
    pytest.param({"priority": 1}, id="priority"),
    pytest.param({"queue": "other"}, id="queue"),
    pytest.param({"run_at": "2998-01-01T00:00:00Z"}, id="run-at"),
])
async def test_repeated_key_with_a_different_body_is_422_naming_idempotency_key(
        api: httpx.AsyncClient, h: str, change: dict[str, Any]) -> None:
    first = await api.post("/v1/jobs", json=job(payload={"n": 1}, idempotency_key="order-3"))
    assert first.status_code == 201, first.text
    response = await api.post("/v1/jobs", json={**job(payload={"n": 1}, idempotency_key="order-3"), **change})
    assert problem_fields(response, 422) == ["idempotency_key"]
    assert await listed(api) == [first.json()["id"]]


async def test_header_key_reused_with_a_different_body_is_422(api: httpx.AsyncClient, h: str) -> None:
    first = await api.post("/v1/jobs", json=job(payload=1), headers={"Idempotency-Key": "order-4"})
    assert first.status_code == 201, first.text
    response = await api.post("/v1/jobs", json=job(payload=2), headers={"Idempotency-Key": "order-4"})
    assert problem_fields(response, 422) == ["idempotency_key"]
    assert await listed(api) == [first.json()["id"]]


async def test_header_and_body_keys_that_differ_are_422(api: httpx.AsyncClient, h: str) -> None:
    response = await api.post("/v1/jobs", json=job(idempotency_key="a"), headers={"Idempotency-Key": "b"})
    assert problem_fields(response, 422) == ["idempotency_key"]
    await assert_nothing_stored(api)
    same = await api.post("/v1/jobs", json=job(idempotency_key="a"), headers={"Idempotency-Key": "a"})
    assert same.status_code == 201, same.text


async def test_same_key_twice_in_one_batch_with_the_same_body_is_one_execution(
        api: httpx.AsyncClient, h: str) -> None:
    item = job(payload={"n": 1}, idempotency_key="dup")
    response = await api.post("/v1/jobs/batch", json={"jobs": [item, job(payload="other"), item]})
    assert response.status_code == 201, response.text
    first, other, third = (e["id"] for e in response.json()["items"])
    assert first == third != other
    assert sorted(await listed(api)) == sorted({first, other})
    again = await api.post("/v1/jobs/batch", json={"jobs": [item]})
    assert again.status_code == 201 and again.json()["items"][0]["id"] == first


async def test_same_key_twice_in_one_batch_with_different_bodies_is_422_naming_the_second(
        api: httpx.AsyncClient, h: str) -> None:
    jobs = [job(payload=1, idempotency_key="dup"), job(), job(payload=2, idempotency_key="dup")]
    response = await api.post("/v1/jobs/batch", json={"jobs": jobs})
    assert problem_fields(response, 422) == ["jobs[2].idempotency_key"]
    await assert_nothing_stored(api)


async def test_batch_item_whose_stored_key_has_a_different_body_rejects_the_batch(
        api: httpx.AsyncClient, h: str) -> None:
    stored = await api.post("/v1/jobs", json=job(payload=1, idempotency_key="taken"))
    assert stored.status_code == 201
    response = await api.post("/v1/jobs/batch", json={"jobs": [job(), job(payload=2, idempotency_key="taken")]})
    assert problem_fields(response, 422) == ["jobs[1].idempotency_key"]
    assert await listed(api) == [stored.json()["id"]]


async def test_concurrent_posts_with_one_key_make_exactly_one_execution(api: httpx.AsyncClient, h: str) -> None:
    body = job(payload={"n": 1}, idempotency_key="race")
    responses = await asyncio.gather(*(api.post("/v1/jobs", json=body) for _ in range(10)))
    assert sorted(r.status_code for r in responses) == [200] * 9 + [201], [r.text for r in responses]
    ids = {r.json()["id"] for r in responses}
    assert len(ids) == 1
    assert await listed(api) == list(ids)


async def test_concurrent_posts_with_one_key_and_different_bodies_store_one(api: httpx.AsyncClient, h: str) -> None:
    responses = await asyncio.gather(*(api.post("/v1/jobs", json=job(payload=i, idempotency_key="race"))
                                       for i in range(10)))
    assert sorted(r.status_code for r in responses) == [201] + [422] * 9, [r.text for r in responses]
    [winner] = [r.json() for r in responses if r.status_code == 201]
    assert await listed(api) == [winner["id"]]



async def test_numbers_sent_as_strings_or_booleans_are_refused_not_coerced(api, h):
    for field, value in (("timeout_seconds", "5"), ("timeout_seconds", True), ("delay_seconds", "5"),
                         ("max_duration_seconds", False)):
        response = await api.post("/v1/jobs", json={"handler": h, field: value})
        assert response.status_code == 422, (field, value)
        assert [e["field"] for e in response.json()["errors"]] == [field]
