"""The committed OpenAPI document is valid OpenAPI 3.1, its webhooks section included."""

from __future__ import annotations

import json
from pathlib import Path

from openapi_spec_validator import validate

COMMITTED = Path(__file__).resolve().parents[2] / "openapi" / "openapi.json"


def test_the_committed_document_is_valid_openapi_3_1() -> None:
    document = json.loads(COMMITTED.read_text())
    assert document["openapi"].startswith("3.1") and document["webhooks"]
    validate(document)  # raises naming the first fault
