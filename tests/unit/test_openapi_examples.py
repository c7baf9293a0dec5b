"""Every example the OpenAPI document shows is a valid instance of its model, validated as
strictly as the API validates a request and the contract checks a response (tests/api_contract.py)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic import BaseModel, TypeAdapter

from app.api.app import create_api
from app.api.responses import Problem

DOCUMENT = create_api(max_request_bytes=1).openapi()


def api_models() -> dict[str, type[BaseModel]]:
    """The pydantic models of app/api by name, as the document's components are named."""
    found: dict[str, type[BaseModel]] = {}
    pending = list(BaseModel.__subclasses__())
    while pending:
        model = pending.pop()
        pending.extend(model.__subclasses__())
        if model.__module__.startswith("app.api."):
            assert found.setdefault(model.__name__, model) is model, f"two models named {model.__name__}"
    return found


EXAMPLES = [(name, i, example) for name, schema in DOCUMENT["components"]["schemas"].items()
            for i, example in enumerate(schema.get("examples", []))]


@pytest.mark.parametrize(("name", "index", "example"), EXAMPLES, ids=[f"{n}[{i}]" for n, i, _ in EXAMPLES])
def test_each_schema_example_is_valid_for_its_model(name: str, index: int, example: Any) -> None:
    TypeAdapter(api_models()[name]).validate_json(json.dumps(example), strict=True)


def test_the_main_requests_and_responses_show_an_example() -> None:
    shown = {name for name, _, _ in EXAMPLES}
    assert {"JobIn", "BatchIn", "ExecutionOut", "BatchOut", "HandlerIn", "HandlerOut", "ScheduleIn", "ScheduleOut",
            "Problem", "DispatchRequest"} <= shown


def test_the_validation_problem_example_of_each_operation_is_a_problem() -> None:
    for path, item in DOCUMENT["paths"].items():
        for method, operation in item.items():
            response = operation["responses"].get("422")
            if response is not None:
                example = response["content"]["application/problem+json"]["example"]
                assert Problem.model_validate(example).status == 422, (method, path)
