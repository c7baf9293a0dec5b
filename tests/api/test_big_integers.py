"""Numbers arrive as sent: an integer beyond 64 bits in a request is stored and shown with its
exact digits (StrictJSONRoute parses bodies with app/domain/jsontext.py). orjson alone would
parse it as a float."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import orjson
import pytest
from pydantic import ValidationError

from app.api.callbacks.models import CompleteIn
from app.api.jobs.models import JobIn
from app.api.schedules.models import ScheduleIn
from app.db.database import Database
from app.domain.jsontext import loads
from tests.conftest import RunningServer, problem_fields, register, settings_for, start_server

BIG = 123456789012345678901234567890
JSON = "application/json"
LATER = '"run_at":"2999-01-01T00:00:00Z"'


@pytest.fixture
async def api(api_only_server: RunningServer, db: Database) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=api_only_server.url, timeout=10) as client:
        await register(client, "h", "http://127.0.0.1:9/jobs")
        yield client


async def post(api: httpx.AsyncClient, path: str, body: str) -> httpx.Response:
    return await api.post(path, content=body.encode(), headers={"content-type": JSON})


def job_text(n: int = BIG) -> str:
    return (f'{{"handler":"h",{LATER},"payload":{{"n":{n},"list":[{-n},1]}},"parameters":{{"p":{n}}},'
            f'"metadata":{{"m":{n}}}}}')


def assert_exact(view_text: str, n: int = BIG) -> None:
    assert f'"payload":{{"n":{n},"list":[{-n},1]}}' in view_text
    assert f'"parameters":{{"p":{n}}}' in view_text
    assert f'"metadata":{{"m":{n}}}' in view_text


async def test_an_integer_beyond_64_bits_in_an_enqueue_is_stored_and_shown_exactly(api: httpx.AsyncClient) -> None:
    created = await post(api, "/v1/jobs", job_text())
    assert created.status_code == 201, created.text
    assert_exact(created.text)
    shown = await api.get(f"/v1/executions/{created.json()['id']}")
    assert_exact(shown.text)
    listed = await api.get("/v1/executions")
    assert_exact(listed.text)


async def test_integers_beyond_64_bits_in_a_batch_are_stored_and_shown_exactly(api: httpx.AsyncClient) -> None:
    numbers = [BIG, 2**64, -(2**63) - 1, 10**400]
    created = await post(api, "/v1/jobs/batch", '{"jobs":[' + ",".join(job_text(n) for n in numbers) + "]}")
    assert created.status_code == 201, created.text
    for n, item in zip(numbers, created.json()["items"], strict=True):
        shown = await api.get(f"/v1/executions/{item['id']}")
        assert_exact(shown.text, n)
        assert shown.json()["payload"]["n"] == n  # the client's own parser (Python's json) agrees


async def test_integers_at_the_64_bit_edges_are_stored_and_shown_exactly(api: httpx.AsyncClient) -> None:
    for n in (2**64 - 1, -(2**63), 2**64, -(2**63) - 1):
        created = await post(api, "/v1/jobs", job_text(n))
        assert created.status_code == 201, created.text
        assert_exact((await api.get(f"/v1/executions/{created.json()['id']}")).text, n)


async def test_a_big_integer_as_the_whole_payload_is_stored_exactly(api: httpx.AsyncClient) -> None:
    created = await post(api, "/v1/jobs", f'{{"handler":"h",{LATER},"payload":{-BIG}}}')
    assert created.status_code == 201, created.text
    assert f'"payload":{-BIG},' in (await api.get(f"/v1/executions/{created.json()['id']}")).text


async def test_an_idempotent_repeat_with_a_big_integer_is_the_same_request(api: httpx.AsyncClient) -> None:
    body = f'{{"handler":"h",{LATER},"payload":{{"n":{BIG}}},"idempotency_key":"big-1"}}'
    first = await post(api, "/v1/jobs", body)
    again = await post(api, "/v1/jobs", body)
    other = await post(api, "/v1/jobs", body.replace(str(BIG), str(BIG + 1)))
    assert (first.status_code, again.status_code) == (201, 200), (first.text, again.text)
    assert first.json()["id"] == again.json()["id"]
    # Two integers that the same float would stand for are different requests.
    assert problem_fields(other, 422) == ["idempotency_key"]


async def test_a_schedule_keeps_integers_beyond_64_bits_exactly(api: httpx.AsyncClient) -> None:
    body = f'{{"cron":"0 0 8 * * *","handler":"h","payload":{{"n":{BIG}}},"metadata":{{"m":{-BIG}}}}}'
    created = await api.put("/v1/schedules/big", content=body.encode(), headers={"content-type": JSON})
    assert created.status_code == 201, created.text
    shown = (await api.get("/v1/schedules/big")).text
    assert f'"payload":{{"n":{BIG}}}' in shown and f'"metadata":{{"m":{-BIG}}}' in shown


async def test_an_integer_of_hundreds_of_digits_is_kept_not_refused_as_infinite(api: httpx.AsyncClient) -> None:
    # orjson reads an integer of 310 digits or more as an overflowing double; jsonb holds it.
    n = 7 * 10**400
    created = await post(api, "/v1/jobs", job_text(n))
    assert created.status_code == 201, created.text
    assert_exact((await api.get(f"/v1/executions/{created.json()['id']}")).text, n)


async def test_an_integer_longer_than_numeric_holds_is_422_not_500(api: httpx.AsyncClient) -> None:
    response = await post(api, "/v1/jobs", f'{{"handler":"h","payload":{"9" * 131073}}}')
    assert problem_fields(response, 422) == ["body"]
    assert "131072 digits" in response.json()["detail"]


@pytest.mark.parametrize("field", ["priority", "max_attempts", "delay_seconds", "timeout_seconds"])
async def test_a_big_integer_where_a_bounded_number_is_due_is_422_naming_the_field(
        api: httpx.AsyncClient, field: str) -> None:
    response = await post(api, "/v1/jobs", f'{{"handler":"h","{field}":{BIG}}}')
    assert problem_fields(response, 422) == [field]


@pytest.mark.parametrize("value", ["NaN", "1e400", '"\\ud800"', '"\\u0000"', "[" * 65 + "]" * 65])
async def test_what_postgresql_cannot_store_is_still_refused_beside_a_big_integer(
        api: httpx.AsyncClient, value: str) -> None:
    problem_fields(await post(api, "/v1/jobs", f'{{"handler":"h","payload":[{BIG}, {value}]}}'), 422)
    assert (await api.get("/v1/executions")).json()["items"] == []


# --- the size cap counts the digits -------------------------------------------------------------

@pytest.fixture(scope="module")
async def small_server(database_url: str) -> AsyncIterator[RunningServer]:
    """50 bytes of job data."""
    server = await start_server(settings_for(database_url, max_payload_bytes=50), background=False)
    yield server
    await server.stop()


async def test_a_big_integer_counts_its_digits_against_the_payload_cap(
        small_server: RunningServer, db: Database) -> None:
    async with httpx.AsyncClient(base_url=small_server.url, timeout=10) as small:
        await register(small, "h", "http://127.0.0.1:9/jobs")
        # {"n":<44 digits>} is 50 bytes; as a float it would be written in 26.
        fits = await post(small, "/v1/jobs", f'{{"handler":"h",{LATER},"payload":{{"n":{"1" * 44}}}}}')
        assert fits.status_code == 201, fits.text
        over = await post(small, "/v1/jobs", f'{{"handler":"h",{LATER},"payload":{{"n":{"1" * 45}}}}}')
        assert problem_fields(over, 413) == ["job"]


# --- the models pass fragments through -----------------------------------------------------------

def test_the_request_models_keep_a_big_integer_as_parsed() -> None:
    document = loads(job_text().encode())
    job = JobIn.model_validate(document)
    assert job.payload["n"] is document["payload"]["n"]
    assert isinstance(job.parameters["p"], orjson.Fragment) and isinstance(job.metadata["m"], orjson.Fragment)
    new = job.to_new_job()
    assert orjson.dumps([new.payload, new.parameters, new.metadata]) == (
        f'[{{"n":{BIG},"list":[{-BIG},1]}},{{"p":{BIG}}},{{"m":{BIG}}}]'.encode())
    complete = CompleteIn.model_validate(loads(f'{{"outcome":"succeeded","result":{{"n":{BIG}}}}}'.encode()))
    assert orjson.dumps(complete.result) == f'{{"n":{BIG}}}'.encode()
    schedule = ScheduleIn.model_validate(loads(f'{{"cron":"* * * * *","handler":"h","payload":{BIG}}}'.encode()))
    assert orjson.dumps(schedule.payload) == str(BIG).encode()


def test_a_big_integer_is_not_an_object_where_one_is_due() -> None:
    with pytest.raises(ValidationError) as info:
        JobIn.model_validate(loads(f'{{"handler":"h","parameters":{BIG}}}'.encode()))
    assert [e["loc"] for e in info.value.errors()] == [("parameters",)]
