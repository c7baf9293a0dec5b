"""The OpenAPI document is one that client generators consume: operationIds a person would write,
a tag per resource, UUIDs declared as UUIDs, every error as problem+json and every success typed."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest

from app.api.app import create_api

DOCUMENT = create_api(max_request_bytes=1).openapi()
METHODS = {"get", "put", "post", "delete", "patch"}

OPERATION_IDS = {
    ("put", "/v1/handlers/{name}"): "putHandler",
    ("get", "/v1/handlers/{name}"): "getHandler",
    ("delete", "/v1/handlers/{name}"): "deleteHandler",
    ("get", "/v1/handlers"): "listHandlers",
    ("post", "/v1/handlers/{name}/secrets"): "addHandlerSecret",
    ("delete", "/v1/handlers/{name}/secrets/{secret_id}"): "deleteHandlerSecret",
    ("get", "/v1/handlers/{name}/keys"): "listHandlerKeys",
    ("get", "/v1/events"): "listEvents",
    ("get", "/v1/events/stream"): "streamEvents",
    ("post", "/v1/handlers/{name}/keys/{key}/pause"): "pauseHandlerKey",
    ("post", "/v1/handlers/{name}/keys/{key}/resume"): "resumeHandlerKey",
    ("post", "/v1/jobs"): "enqueueJob",
    ("post", "/v1/jobs/batch"): "enqueueJobs",
    ("get", "/v1/executions"): "listExecutions",
    ("get", "/v1/executions/{execution_id}"): "getExecution",
    ("delete", "/v1/executions/{execution_id}"): "deleteExecution",
    ("post", "/v1/executions/{execution_id}/cancel"): "cancelExecution",
    ("post", "/v1/executions/{execution_id}/retry"): "retryExecution",
    ("get", "/v1/executions/{execution_id}/attempts"): "listExecutionAttempts",
    ("get", "/v1/executions/{execution_id}/events"): "listExecutionEvents",
    ("get", "/v1/executions/{execution_id}/blockers"): "listExecutionBlockers",
    ("get", "/v1/executions/{execution_id}/logs"): "listExecutionLogs",
    ("post", "/v1/executions/bulk-retry"): "bulkRetryExecutions",
    ("post", "/v1/executions/bulk-cancel"): "bulkCancelExecutions",
    ("post", "/v1/executions/bulk-delete"): "bulkDeleteExecutions",
    ("post", "/v1/executions/{execution_id}/logs"): "appendExecutionLogs",
    ("post", "/v1/executions/{execution_id}/complete"): "completeExecution",
    ("post", "/v1/executions/{execution_id}/progress"): "reportProgress",
    ("post", "/v1/executions/{execution_id}/heartbeat"): "heartbeat",
    ("get", "/v1/executions/{execution_id}/steps/{name}"): "getStep",
    ("put", "/v1/executions/{execution_id}/steps/{name}"): "putStep",
    ("put", "/v1/schedules/{job_id}"): "putSchedule",
    ("get", "/v1/schedules/{job_id}"): "getSchedule",
    ("delete", "/v1/schedules/{job_id}"): "deleteSchedule",
    ("get", "/v1/schedules"): "listSchedules",
    ("post", "/v1/schedules/{job_id}/trigger"): "triggerSchedule",
    ("get", "/v1/schedules/{job_id}/preview"): "previewSchedule",
    ("get", "/v1/queues"): "listQueues",
    ("post", "/v1/queues/{name}/pause"): "pauseQueue",
    ("post", "/v1/queues/{name}/resume"): "resumeQueue",
    ("get", "/v1/nodes"): "listNodes",
    ("post", "/v1/api-keys"): "createApiKey",
    ("get", "/v1/api-keys"): "listApiKeys",
    ("delete", "/v1/api-keys/{key_id}"): "deleteApiKey",
    ("get", "/healthz"): "health",
    ("get", "/readyz"): "readiness",
    ("get", "/metrics"): "metrics",
    ("put", "/v1/subscriptions/{name}"): "putSubscription",
    ("get", "/v1/subscriptions/{name}"): "getSubscription",
    ("delete", "/v1/subscriptions/{name}"): "deleteSubscription",
    ("get", "/v1/subscriptions"): "listSubscriptions",
    ("post", "/v1/subscriptions/{name}/secrets"): "addSubscriptionSecret",
    ("delete", "/v1/subscriptions/{name}/secrets/{secret_id}"): "deleteSubscriptionSecret",
    ("get", "/v1/subscriptions/{name}/deliveries"): "listSubscriptionDeliveries",
    ("post", "/v1/subscriptions/{name}/deliveries/{delivery_id}/resend"): "resendDelivery",
    ("post", "/v1/subscriptions/{name}/recover"): "recoverSubscription",
    ("get", "/v1/executions/{execution_id}/parents"): "listParents",
    ("post", "/v1/executions/{execution_id}/children"): "spawnChildren",
    ("get", "/v1/executions/{execution_id}/children"): "listChildren",
    ("post", "/v1/executions/{execution_id}/signals/{name}"): "sendSignal",
    ("get", "/v1/executions/{execution_id}/signals"): "listSignals",
    ("post", "/v1/workflows"): "createWorkflow",
    ("get", "/v1/workflows"): "listWorkflows",
    ("get", "/v1/workflows/{workflow_id}"): "getWorkflow",
    ("get", "/v1/workflows/{workflow_id}/jobs"): "listWorkflowJobs",
    ("post", "/v1/workflows/{workflow_id}/jobs"): "addWorkflowJobs",
    ("post", "/v1/workflows/{workflow_id}/cancel"): "cancelWorkflow",
    ("post", "/v1/workflows/{workflow_id}/retry"): "retryWorkflow",
    ("post", "jobDispatch"): "dispatchJob",  # the webhooks
    ("post", "jobBatchDispatch"): "dispatchJobs",
    ("post", "eventDelivery"): "deliverEvent",
}
WEBHOOKS = {"jobDispatch", "jobBatchDispatch", "eventDelivery"}  # what Jobwire sends: whatever the receiver answers


def operations() -> Iterator[tuple[str, str, dict[str, Any]]]:
    """Every operation of the document, its webhooks' included: (method, path or name, operation)."""
    for section in ("paths", "webhooks"):
        for path, item in DOCUMENT.get(section, {}).items():
            for method, operation in item.items():
                if method in METHODS:
                    yield method, path, operation


def schema(name: str) -> dict[str, Any]:
    return DOCUMENT["components"]["schemas"][name]


def test_every_operation_has_a_unique_camel_case_operation_id() -> None:
    ids = [operation.get("operationId") for _, _, operation in operations()]
    assert all(isinstance(i, str) and re.fullmatch(r"[a-z][A-Za-z]+", i) for i in ids), ids
    assert len(ids) == len(set(ids))


def test_operation_ids_are_the_names_clients_call() -> None:
    assert {(method, path): operation["operationId"] for method, path, operation in operations()} == OPERATION_IDS


def test_every_operation_has_one_resource_tag_described_at_the_top() -> None:
    described = {tag["name"]: tag.get("description") for tag in DOCUMENT["tags"]}
    assert all(described.values())
    assert set(described) == {"handlers", "jobs", "executions", "callbacks", "events", "schedules", "queues", "nodes",
                              "api-keys", "health", "dispatch", "subscriptions", "event-delivery", "workflows"}
    used = set()
    for method, path, operation in operations():
        assert len(operation["tags"]) == 1 and operation["tags"][0] in described, (method, path)
        used.add(operation["tags"][0])
    assert used == set(described)


@pytest.mark.parametrize("parameter", ["execution_id", "secret_id", "key_id", "workflow_id"])
def test_id_path_parameters_are_uuids(parameter: str) -> None:
    found = [p for _, _, operation in operations() for p in operation.get("parameters", ())
             if p["in"] == "path" and p["name"] == parameter]
    assert found
    assert all(p["schema"]["type"] == "string" and p["schema"]["format"] == "uuid" for p in found)


@pytest.mark.parametrize(("model", "field"), [
    ("ExecutionOut", "id"), ("TransitionEventOut", "execution_id"), ("ApiKeyOut", "id"), ("ApiKeyCreated", "id"),
    ("HandlerSecretOut", "id"), ("SecretCreated", "id"), ("DispatchRequest", "execution_id"),
])
def test_id_fields_of_uuids_are_declared_uuids(model: str, field: str) -> None:
    declared = schema(model)["properties"][field]
    assert (declared["type"], declared["format"]) == ("string", "uuid")


def test_job_ids_are_free_strings_not_uuids() -> None:
    # A job_id is the caller's name (`resize-42`); only an execution enqueued without one gets its id.
    for model in ("ExecutionOut", "TransitionEventOut", "ScheduleOut", "DispatchRequest"):
        assert schema(model)["properties"]["job_id"]["type"] == "string"
        assert "format" not in schema(model)["properties"]["job_id"]


def test_every_error_response_is_problem_json_only() -> None:
    for method, path, operation in operations():
        if path in WEBHOOKS:
            continue  # a handler's or subscriber's replies: whatever it sends
        for status, response in operation["responses"].items():
            if not status.startswith("2"):
                assert set(response["content"]) == {"application/problem+json"}, (method, path, status)
                media = response["content"]["application/problem+json"]
                assert media["schema"] == {"$ref": "#/components/schemas/Problem"}, (method, path, status)


def test_validation_problems_show_an_example_naming_the_fields() -> None:
    response = DOCUMENT["paths"]["/v1/jobs"]["post"]["responses"]["422"]
    example = response["content"]["application/problem+json"]["example"]
    assert example["status"] == 422 and [e["field"] for e in example["errors"]] == ["handler", "priority"]


def test_problems_that_say_when_to_come_back_declare_their_headers() -> None:
    responses = DOCUMENT["paths"]["/v1/executions"]["get"]["responses"]
    assert "Retry-After" in responses["503"]["headers"]
    assert "WWW-Authenticate" in responses["401"]["headers"]


def test_every_operation_that_takes_a_body_may_answer_413() -> None:
    # The body cap answers before any route (BodyLimitMiddleware).
    taking = [(m, p) for m, p, o in operations() if "requestBody" in o and p not in WEBHOOKS]
    assert len(taking) > 10
    for method, path in taking:
        assert "413" in DOCUMENT["paths"][path][method]["responses"], (method, path)


def test_every_success_response_has_a_schema() -> None:
    for method, path, operation in operations():
        for status, response in operation["responses"].items():
            if status.startswith("2") and status != "204":
                for media, content in response.get("content", {}).items():
                    assert content.get("schema"), (method, path, status, media)


def test_no_success_response_is_declared_with_a_status_its_route_never_answers() -> None:
    # Creations answer 201, upserts 200 or 201, deletions 204: each declared as sent.
    statuses = {(m, p): sorted(s for s in o["responses"] if s.startswith("2")) for m, p, o in operations()}
    assert statuses[("post", "/v1/jobs")] == ["200", "201"]
    assert statuses[("post", "/v1/jobs/batch")] == ["201"]
    assert statuses[("put", "/v1/handlers/{name}")] == ["200", "201"]
    assert statuses[("put", "/v1/schedules/{job_id}")] == ["200", "201"]
    assert statuses[("put", "/v1/executions/{execution_id}/steps/{name}")] == ["200", "201"]
    assert statuses[("post", "/v1/schedules/{job_id}/trigger")] == ["201"]
    assert statuses[("post", "/v1/api-keys")] == ["201"]
    assert all(statuses[(m, p)] == ["204"] for m, p in statuses if m == "delete")


def test_queue_counts_name_each_counted_state() -> None:
    assert set(schema("QueueCounts")["required"]) == {"ENQUEUED", "PROCESSING", "DEAD_LETTER"}


def test_the_management_and_callback_schemes_stay_declared() -> None:
    schemes = DOCUMENT["components"]["securitySchemes"]
    assert set(schemes) == {"HTTPBearer", "CallbackToken"}
    securities = {m + " " + p: o["security"] for m, p, o in operations() if p not in WEBHOOKS}
    assert securities["post /v1/jobs"] == [{"HTTPBearer": []}]
    assert securities["post /v1/executions/{execution_id}/complete"] == [{"CallbackToken": []}]
    assert DOCUMENT["paths"]["/v1/jobs"]["post"]["x-jobwire-scope"] == "enqueue"


def test_optional_query_parameters_offer_no_null() -> None:
    # A query string cannot say null: omitting the parameter is what the route's None means.
    for method, path, operation in operations():
        for parameter in operation.get("parameters", ()):
            if parameter["in"] == "query":
                assert "anyOf" not in parameter["schema"], (method, path, parameter["name"])


def test_summaries_read_as_the_operation_ids_say() -> None:
    summaries = {o["operationId"]: o["summary"] for _, _, o in operations()}
    assert summaries["enqueueJobs"] == "Enqueue jobs"
    assert summaries["appendExecutionLogs"] == "Append execution logs"
    assert summaries["createApiKey"] == "Create API key"
