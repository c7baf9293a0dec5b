"""GET /v1/executions's filters beside state, queue, handler and job_id: `idempotency_key`,
`concurrency_key`, `metadata=key:value` (the value a JSON string) and the half-open window
`created_after` / `created_before`. Each returns exactly its rows, newest first, across page
boundaries of a small page (rows sharing a created_at included: the keyset's tie-break); bad
values are 422 problems naming the parameter."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import httpx
import pytest

from app.db.database import Database
from tests.conftest import problem_fields, sql

LATER = "2999-01-01T00:00:00Z"  # keeps a job ENQUEUED, never dispatched
BASE = datetime(2026, 11, 1, 12, 0, tzinfo=UTC)


async def enqueue(api: httpx.AsyncClient, **fields: Any) -> str:
    response = await api.post("/v1/jobs", json={"handler": "h", "run_at": LATER, **fields})
    assert response.status_code == 201, response.text
    return response.json()["id"]


async def created_at(db: Database, execution_id: str, when: datetime) -> None:
    await sql(db, "UPDATE job_executions SET created_at = :at WHERE id = :id", at=when, id=uuid.UUID(execution_id))


async def walk(api: httpx.AsyncClient, limit: int = 2, **params: Any) -> list[str]:
    """Every id the listing yields with these filters, following next_cursor (each page at most
    `limit`, and full but for the last)."""
    ids: list[str] = []
    cursor: str | None = None
    while True:
        response = await api.get("/v1/executions", params={"limit": limit, **params,
                                                           **({"cursor": cursor} if cursor else {})})
        assert response.status_code == 200, response.text
        page = response.json()
        assert len(page["items"]) <= limit
        ids += [e["id"] for e in page["items"]]
        cursor = page["next_cursor"]
        if cursor is None:
            return ids
        assert len(page["items"]) == limit


def newest_first(rows: list[tuple[str, datetime]]) -> list[str]:
    """The listing's order: created_at newest first, then id (a UUID's text sorts as its bytes)."""
    return [i for i, _ in sorted(sorted(rows, key=lambda r: r[0]), key=lambda r: r[1], reverse=True)]


@pytest.fixture
async def world(h_api: httpx.AsyncClient, db: Database) -> dict[str, tuple[str, datetime, dict[str, Any]]]:
    """15 executions: three to a created_at (ties across page boundaries), keys and metadata
    spread over them. id → (id, created_at, fields)."""
    rows = {}
    for i in range(15):
        fields: dict[str, Any] = {"job_id": f"job-{i}", "idempotency_key": f"idem-{i}"}
        if i % 3 != 2:
            fields["concurrency_key"] = f"key-{i % 3}"
        if i % 4 != 3:
            fields["metadata"] = {"team": "ops" if i % 2 else "dev", "n": i}
        execution_id = await enqueue(h_api, **fields)
        when = BASE + timedelta(minutes=i // 3)
        await created_at(db, execution_id, when)
        rows[execution_id] = (execution_id, when, fields)
    return rows


def expected(world: dict[str, tuple[str, datetime, dict[str, Any]]], keep: Any) -> list[str]:
    return newest_first([(i, when) for i, when, fields in world.values() if keep(fields, when)])


async def test_each_filter_returns_exactly_its_rows_across_pages(h_api: httpx.AsyncClient, world: Any) -> None:
    for key in ("key-0", "key-1", "key-2"):
        want = expected(world, lambda f, _, key=key: f.get("concurrency_key") == key)
        assert await walk(h_api, concurrency_key=key) == want
    for team in ("ops", "dev"):
        want = expected(world, lambda f, _, team=team: f.get("metadata", {}).get("team") == team)
        assert len(want) >= 4
        for limit in (1, 2, 3, 50):
            assert await walk(h_api, limit=limit, metadata=f"team:{team}") == want
    assert await walk(h_api, idempotency_key="idem-7") == expected(world, lambda f, _: f["idempotency_key"] == "idem-7")
    assert await walk(h_api, idempotency_key="idem-99") == []
    assert await walk(h_api, concurrency_key="key-9") == []
    assert await walk(h_api, metadata="team:nobody") == []
    # Everything, for comparison: the new filters narrow the listing and keep its order.
    assert await walk(h_api) == expected(world, lambda f, _: True)


async def test_the_time_window_is_half_open_and_pages_through_its_ties(h_api: httpx.AsyncClient, world: Any) -> None:
    after, before = BASE + timedelta(minutes=1), BASE + timedelta(minutes=4)
    window = {"created_after": after.isoformat(), "created_before": before.isoformat()}
    want = expected(world, lambda _, when: after <= when < before)
    assert len(want) == 9  # minutes 1, 2 and 3; minute 4's rows start at `before`, excluded
    for limit in (1, 2, 4):
        assert await walk(h_api, limit=limit, **window) == want
    assert await walk(h_api, created_after=after.isoformat()) == expected(world, lambda _, when: when >= after)
    assert await walk(h_api, created_before=after.isoformat()) == expected(world, lambda _, when: when < after)
    # An offset other than UTC is the same instant.
    assert await walk(h_api, created_after=after.astimezone(timezone(timedelta(hours=-5))).isoformat(),
                      created_before=before.isoformat()) == want


async def test_the_filters_combine(h_api: httpx.AsyncClient, world: Any, db: Database) -> None:
    after = BASE + timedelta(minutes=2)
    want = expected(world, lambda f, when: when >= after and f.get("metadata", {}).get("team") == "ops"
                    and f.get("concurrency_key") == "key-1")
    assert want
    assert await walk(h_api, limit=1, metadata="team:ops", concurrency_key="key-1",
                      created_after=after.isoformat()) == want
    assert await walk(h_api, metadata="team:ops", concurrency_key="key-1", created_after=after.isoformat(),
                      state="CANCELLED") == []
    cancelled = want[0]
    assert (await h_api.post(f"/v1/executions/{cancelled}/cancel")).status_code == 200
    assert await walk(h_api, metadata="team:ops", concurrency_key="key-1", created_after=after.isoformat(),
                      state="CANCELLED") == [cancelled]


async def test_the_metadata_value_is_compared_as_a_json_string(h_api: httpx.AsyncClient) -> None:
    values: dict[str, Any] = {"string": "42", "number": 42, "true-string": "true", "true": True, "null": None,
                              "null-string": "null", "array": ["42"], "object": {"v": "42"}, "empty": "",
                              "colon": "a:b", "unicode": "grüße 🎉", "float": 4.2, "float-string": "4.2"}
    ids = {name: await enqueue(h_api, metadata={"k": value, "name": name}) for name, value in values.items()}
    ids["other-key"] = await enqueue(h_api, metadata={"other": "42"})
    ids["empty-metadata"] = await enqueue(h_api, metadata={})
    ids["no-metadata"] = await enqueue(h_api)
    ids["nested"] = await enqueue(h_api, metadata={"outer": {"k": "42"}})

    async def found(value: str) -> set[str]:
        names = {execution_id: name for name, execution_id in ids.items()}
        return {names[i] for i in await walk(h_api, limit=3, metadata=f"k:{value}")}

    assert await found("42") == {"string"}
    assert await found("true") == {"true-string"}
    assert await found("null") == {"null-string"}
    assert await found("") == {"empty"}
    assert await found("a:b") == {"colon"}  # split on the first `:` only
    assert await found("grüße 🎉") == {"unicode"}
    assert await found("4.2") == {"float-string"}
    assert await found("4.20") == set()
    assert await walk(h_api, metadata="name:object") == [ids["object"]]
    assert await walk(h_api, metadata="outer:42") == []  # the key is a top-level key, not a path


@pytest.mark.parametrize(("params", "field"), [
    ({"metadata": "no-colon"}, "metadata"),
    ({"metadata": ":value"}, "metadata"),
    ({"metadata": "k:nul\x00"}, "metadata"),
    ({"metadata": "k:" + "x" * 1000}, "metadata"),
    ({"created_after": "2026-12-01T00:00:00"}, "created_after"),  # no offset
    ({"created_before": "yesterday"}, "created_before"),
    ({"created_before": "1700000000"}, "created_before"),  # epoch seconds are no RFC 3339
    ({"created_before": "2026-12-01"}, "created_before"),  # nor is a date alone
    ({"created_after": "0001-01-01T00:00:00+01:00"}, "created_after"),  # before the year 1 in UTC
    ({"created_before": "9999-12-31T23:59:59-01:00"}, "created_before"),  # after 9999 in UTC
    ({"created_after": "2026-12-01T00:00:00Z", "created_before": "2026-12-01T00:00:00Z"}, "created_after"),
    ({"created_after": "2026-12-02T00:00:00Z", "created_before": "2026-12-01T00:00:00+01:00"}, "created_after"),
    ({"idempotency_key": "not a name"}, "idempotency_key"),
    ({"concurrency_key": ""}, "concurrency_key"),
])
async def test_bad_filters_are_problems_naming_the_parameter(h_api: httpx.AsyncClient, params: dict[str, str],
                                                             field: str) -> None:
    assert problem_fields(await h_api.get("/v1/executions", params=params), 422) == [field]


async def test_an_empty_window_names_created_after(h_api: httpx.AsyncClient) -> None:
    response = await h_api.get("/v1/executions", params={"created_after": "2026-12-02T00:00:00Z",
                                                         "created_before": "2026-12-01T00:00:00Z"})
    assert problem_fields(response, 422) == ["created_after"]
    assert "before created_before" in response.json()["errors"][0]["message"]
