"""The response contract checker (tests/api_contract.py) catches a body that is not its route's
declared model, so the suite-wide check cannot pass by checking nothing; and every JSON answer
the OpenAPI document shows has a model to be checked against."""

from __future__ import annotations

from typing import Any

import httpx
import orjson
import pytest
from fastapi import FastAPI

from app.api.app import create_api
from app.domain.jsontext import dumps
from tests import api_contract
from tests.api_contract import ContractViolation, ResponseContract, checking, violation

APP = create_api(max_request_bytes=1)
SOME_ID = "00000000-0000-4000-8000-000000000000"
EXECUTION: dict[str, Any] = {
    "id": SOME_ID, "job_id": SOME_ID, "job_type": "DELAYED", "handler": "h", "queue": "default",
    "state": "ENQUEUED", "attempt": 0, "max_attempts": 5, "priority": 0, "stateful": False,
    "payload": {"n": 2**70}, "parameters": None, "metadata": None, "result": None,
    "progress": {"total": 0, "succeeded": 0, "failed": 0, "status": None, "percentage": 0},
    "scheduled_at": "2999-01-01T00:00:00Z", "created_at": "2024-01-01T00:00:00.123456Z", "started_at": None,
    "completed_at": None, "deadline_at": None, "locked_by": None, "last_error": None, "error_type": None,
}


def check(method: str, path: str, status: int, body: Any, content_type: str = "application/json") -> str | None:
    return violation(APP, method, path, status, content_type, dumps(body))


def test_a_body_matching_its_model_passes() -> None:
    assert check("GET", f"/v1/executions/{SOME_ID}", 200, EXECUTION) is None
    assert check("POST", "/v1/jobs", 201, EXECUTION) is None
    assert check("POST", "/v1/jobs", 200, EXECUTION) is None  # declared: an idempotent repeat
    assert check("GET", "/v1/executions", 200, {"items": [EXECUTION], "next_cursor": None}) is None


@pytest.mark.parametrize(("change", "wording"), [
    ({"colour": "red"}, "extra_forbidden"),
    ({"progress": {**EXECUTION["progress"], "eta": 1}}, "progress.eta"),
    ({"attempt": "0"}, "int_type"),
    ({"attempt": 1.5}, "int_type"),
    ({"state": "RUNNING"}, "literal_error"),
    ({"created_at": "2024-01-01T01:00:00+01:00"}, "not a UTC time"),
    ({"started_at": "2024-01-01T00:00:00"}, "not a UTC time"),
    ({"scheduled_at": 1704067200}, "datetime_type"),
])
def test_a_wrong_field_is_a_violation(change: dict[str, Any], wording: str) -> None:
    found = check("GET", f"/v1/executions/{SOME_ID}", 200, {**EXECUTION, **change})
    assert found is not None and wording in found, found


def test_a_missing_field_is_a_violation() -> None:
    body = {k: v for k, v in EXECUTION.items() if k != "last_error"}
    found = check("POST", f"/v1/executions/{SOME_ID}/cancel", 200, body)
    assert found is not None and "last_error" in found and "missing" in found


def test_a_list_item_is_checked_too() -> None:
    found = check("POST", "/v1/jobs/batch", 201, {"items": [EXECUTION, {**EXECUTION, "id": None}]})
    assert found is not None and "items.1.id" in found


def test_a_2xx_status_the_route_does_not_declare_is_a_violation() -> None:
    found = check("POST", "/v1/jobs/batch", 200, {"items": [EXECUTION]})
    assert found is not None and "does not declare" in found


def test_what_the_contract_does_not_cover_is_not_checked() -> None:
    assert check("GET", f"/v1/executions/{SOME_ID}", 404, {"anything": 1}) is None
    assert check("DELETE", "/v1/handlers/h", 204, None) is None
    assert check("GET", "/metrics", 200, "# TYPE x gauge", "text/plain; version=0.0.4") is None
    assert check("GET", "/openapi.json", 200, {"openapi": "3.1.0"}) is None
    assert check("GET", "/v1/nowhere", 200, {"anything": 1}) is None


def test_a_json_answer_of_a_route_without_a_model_is_a_violation() -> None:
    app = FastAPI()

    @app.get("/bare", response_model=None)
    async def bare() -> dict[str, int]:
        return {"n": 1}

    found = violation(app, "GET", "/bare", 200, "application/json", b'{"n":1}')
    assert found is not None and "declares no response model" in found


def test_an_integer_past_what_pydantic_parses_still_validates() -> None:
    digits = "9" * 5000
    body = orjson.dumps({**EXECUTION, "payload": None}).replace(b'"payload":null', f'"payload":{digits}'.encode())
    assert violation(APP, "GET", f"/v1/executions/{SOME_ID}", 200, "application/json", body) is None


async def test_a_client_request_to_a_registered_server_raises_on_a_violation() -> None:
    contract = ResponseContract()
    live = True
    contract.register("http://jobwire.test", APP, live=lambda: live)
    answers = {f"/v1/executions/{SOME_ID}": {**EXECUTION, "colour": "red"}, "/healthz": {"status": "ok"}}

    def answer(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json=answers[request.url.path])

    transport = httpx.MockTransport(answer)
    before = httpx.AsyncClient.send
    with checking(contract) as seen:
        async with httpx.AsyncClient(transport=transport, base_url="http://jobwire.test") as client:
            assert (await client.get("/healthz")).json() == {"status": "ok"}
            with pytest.raises(ContractViolation, match="extra_forbidden"):
                await client.get(f"/v1/executions/{SOME_ID}")
            live = False  # a stopped server's port is not checked
            assert (await client.get(f"/v1/executions/{SOME_ID}")).status_code == 200
        async with httpx.AsyncClient(transport=transport, base_url="http://elsewhere.test") as client:
            assert (await client.get(f"/v1/executions/{SOME_ID}")).status_code == 200
    assert len(seen) == 1 and "extra_forbidden" in seen[0]
    assert httpx.AsyncClient.send is before


def test_the_suite_wide_contract_is_installed() -> None:
    # tests/conftest.py's autouse fixture wraps send for every test.
    assert hasattr(httpx.AsyncClient.send, "__wrapped__")


def test_every_json_answer_the_document_shows_has_a_model() -> None:
    unmodelled = []
    for path, operations in APP.openapi()["paths"].items():
        for method, operation in operations.items():
            for status, response in operation["responses"].items():
                schema = response.get("content", {}).get("application/json", {}).get("schema")
                if status.startswith("2") and schema is not None and not schema:
                    unmodelled.append(f"{method.upper()} {path} {status}")
    assert unmodelled == []
    routes = api_contract.api_routes(APP)
    assert len(routes) > 25
    for route in routes:
        for status, model in api_contract.declared_statuses(route).items():
            # Not JSON: the metrics' text, the event stream's server-sent events.
            assert model is not None or status == 204 or route.path in ("/metrics", "/v1/events/stream"), \
                (route.path, status)
