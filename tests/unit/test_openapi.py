"""openapi/openapi.json is what `jobwire openapi` writes for this code."""

from __future__ import annotations

import json
from pathlib import Path

from app.api.app import create_api

COMMITTED = Path(__file__).resolve().parents[2] / "openapi" / "openapi.json"


def test_committed_openapi_document_is_current():
    current = create_api(max_request_bytes=1).openapi()
    assert json.loads(COMMITTED.read_text()) == json.loads(json.dumps(current)), "run `jobwire openapi`"


def test_every_error_response_is_documented_as_problem_json_shape():
    paths = create_api(max_request_bytes=1).openapi()["paths"]
    assert {"/v1/jobs", "/v1/jobs/batch", "/v1/handlers/{name}", "/v1/executions",
            "/v1/executions/{execution_id}/complete", "/healthz", "/readyz"} <= set(paths)
