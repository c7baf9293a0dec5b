"""The client's surface against the API's document (openapi/openapi.json), without a server:
every operation has a client method (a route added without one fails here), the blocking and the
asyncio facades expose the same methods with the same parameters (they cannot drift), and every
resource object declares the fields of its schema and reads that shape, a field it does not know
kept in `raw`."""

from __future__ import annotations

import inspect
import json
from pathlib import Path
from typing import Any

import pytest

import jobwire
from jobwire import models
from jobwire._resend import RESEND

DOCUMENT = json.loads((Path(__file__).resolve().parents[2] / "openapi" / "openapi.json").read_text())

# operationId → the client's method for it (the same path on both clients).
CLIENT_METHODS = {
    "putHandler": "handlers.put",
    "getHandler": "handlers.get",
    "listHandlers": "handlers.list",
    "deleteHandler": "handlers.delete",
    "addHandlerSecret": "handlers.add_secret",
    "deleteHandlerSecret": "handlers.delete_secret",
    "listHandlerKeys": "handlers.keys",
    "pauseHandlerKey": "handlers.pause_key",
    "resumeHandlerKey": "handlers.resume_key",
    "enqueueJob": "jobs.enqueue",
    "enqueueJobs": "jobs.enqueue_batch",
    "createWorkflow": "workflows.create",
    "addWorkflowJobs": "workflows.add_jobs",
    "getWorkflow": "workflows.get",
    "listWorkflows": "workflows.list",
    "listWorkflowJobs": "workflows.jobs",
    "cancelWorkflow": "workflows.cancel",
    "retryWorkflow": "workflows.retry",
    "getExecution": "executions.get",
    "listExecutions": "executions.list",
    "listExecutionLogs": "executions.logs",
    "listExecutionAttempts": "executions.attempts",
    "listExecutionEvents": "executions.events",
    "listExecutionBlockers": "executions.blockers",
    "deleteExecution": "executions.delete",
    "cancelExecution": "executions.cancel",
    "retryExecution": "executions.retry",
    "sendSignal": "executions.signal",
    "listSignals": "executions.signals",
    "bulkRetryExecutions": "executions.bulk_retry",
    "bulkCancelExecutions": "executions.bulk_cancel",
    "bulkDeleteExecutions": "executions.bulk_delete",
    "listEvents": "events.page",
    "streamEvents": "events.stream",
    "putSubscription": "subscriptions.put",
    "getSubscription": "subscriptions.get",
    "listSubscriptions": "subscriptions.list",
    "deleteSubscription": "subscriptions.delete",
    "addSubscriptionSecret": "subscriptions.add_secret",
    "deleteSubscriptionSecret": "subscriptions.delete_secret",
    "listSubscriptionDeliveries": "subscriptions.deliveries",
    "resendDelivery": "subscriptions.resend",
    "recoverSubscription": "subscriptions.recover",
    "putSchedule": "schedules.put",
    "getSchedule": "schedules.get",
    "listSchedules": "schedules.list",
    "deleteSchedule": "schedules.delete",
    "triggerSchedule": "schedules.trigger",
    "previewSchedule": "schedules.preview",
    "listQueues": "queues.list",
    "pauseQueue": "queues.pause",
    "resumeQueue": "queues.resume",
    "listNodes": "nodes.list",
    "createApiKey": "api_keys.create",
    "listApiKeys": "api_keys.list",
    "deleteApiKey": "api_keys.delete",
    "health": "health",
    "readiness": "readiness",
    "metrics": "metrics",
}
# The callbacks a handler makes with its execution's token: the handler toolkit's (jobwire.handler's
# Context), not the client's, which holds an API key.
CALLBACKS = {"appendExecutionLogs", "completeExecution", "reportProgress", "heartbeat", "getStep", "putStep",
             "listParents", "spawnChildren", "listChildren"}

RESOURCES = ("handlers", "jobs", "workflows", "executions", "events", "subscriptions", "schedules", "queues", "nodes",
             "api_keys")
ITERATORS = {("executions", "list"), ("executions", "logs"), ("executions", "events"), ("executions", "signals"),
             ("handlers", "keys"),
             ("events", "list"), ("events", "follow"), ("events", "stream"), ("subscriptions", "deliveries"),
             ("workflows", "list"), ("workflows", "jobs")}

# Each resource object and the schemas of the document it is read from.
SCHEMAS = {
    models.Execution: ["ExecutionOut", "BatchItemOut"],
    models.WorkflowRef: ["WorkflowRefOut"],
    models.Workflow: ["WorkflowOut", "WorkflowMade", "WorkflowRetried"],
    models.WorkflowItem: ["WorkflowItemOut"],
    models.WorkflowJob: ["WorkflowJobOut"],
    models.AddedJobs: ["WorkflowJobsAdded"],
    models.WorkflowEvent: ["WorkflowEventOut"],
    models.Debounce: ["DebounceIn"],
    models.Progress: ["ProgressOut"],
    models.Attempt: ["AttemptOut"],
    models.Blocker: ["BlockerOut"],
    models.Blockers: ["BlockerList"],
    models.Event: ["EventOut"],
    models.EventPage: ["FeedPage"],
    models.TransitionEvent: ["TransitionEventOut"],
    models.LogEntry: ["LogOut"],
    models.Signal: ["SignalOut"],
    models.SignalSent: ["SignalSent"],
    models.BulkResult: ["BulkResultOut"],
    models.BulkDryRun: ["BulkDryRunOut"],
    models.Handler: ["HandlerOut"],
    models.Subscription: ["SubscriptionOut"],
    models.Delivery: ["DeliveryOut"],
    models.Circuit: ["CircuitOut"],
    models.AdaptiveLimit: ["AdaptiveOut"],
    models.HandlerSecret: ["HandlerSecretOut", "SecretCreated"],
    models.RateLimit: ["RateLimitOut", "RateLimitIn"],
    models.ConcurrencyKey: ["KeyOut"],
    models.KeyRate: ["KeyRateOut"],
    models.Schedule: ["ScheduleOut"],
    models.Queue: ["QueueOut"],
    models.Node: ["NodeOut"],
    models.ApiKey: ["ApiKeyOut", "ApiKeyCreated"],
    models.Health: ["Health"],
}


def operations() -> set[str]:
    return {op["operationId"] for item in DOCUMENT["paths"].values() for op in item.values() if "operationId" in op}


def test_every_operation_of_the_api_has_a_method_on_both_clients():
    found = operations()
    assert found - CALLBACKS - set(CLIENT_METHODS) == set(), "operations without a client method"
    assert set(CLIENT_METHODS) - found == set(), "client methods of operations the API no longer has"
    assert set(RESEND) == set(CLIENT_METHODS), "operations without a row in jobwire._resend.RESEND"
    for client in (jobwire.JobwireClient("http://127.0.0.1:9"), jobwire.AsyncJobwireClient("http://127.0.0.1:9")):
        for operation, dotted in CLIENT_METHODS.items():
            target: Any = client
            for part in dotted.split("."):
                target = getattr(target, part)
            assert callable(target), (operation, dotted)


def public_methods(kind: type) -> dict[str, Any]:
    return {name: member for name, member in vars(kind).items() if callable(member) and not name.startswith("_")}


@pytest.mark.parametrize("resource", RESOURCES)
def test_the_blocking_and_asyncio_facades_have_the_same_methods_and_parameters(resource: str):
    blocking = type(getattr(jobwire.JobwireClient("http://127.0.0.1:9"), resource))
    asynchronous = type(getattr(jobwire.AsyncJobwireClient("http://127.0.0.1:9"), resource))
    methods, async_methods = public_methods(blocking), public_methods(asynchronous)
    assert set(methods) == set(async_methods)
    for name, method in methods.items():
        signature, async_signature = inspect.signature(method), inspect.signature(async_methods[name])
        assert signature.parameters == async_signature.parameters, (resource, name)
        returned = signature.return_annotation
        if (resource, name) in ITERATORS:
            assert not inspect.iscoroutinefunction(async_methods[name]), (resource, name)
            assert async_signature.return_annotation == f"Async{returned}", (resource, name)
        else:
            assert inspect.iscoroutinefunction(async_methods[name]), (resource, name)
            assert async_signature.return_annotation == returned, (resource, name)
        assert returned not in (inspect.Signature.empty, "Any"), (resource, name)
        assert async_methods[name].__doc__ == method.__doc__ and method.__doc__, (resource, name)


def test_the_clients_own_methods_match_too():
    blocking, asynchronous = public_methods(jobwire.JobwireClient), public_methods(jobwire.AsyncJobwireClient)
    assert set(asynchronous) == set(blocking) | {"aclose"}
    for name, method in blocking.items():
        assert inspect.signature(method) == inspect.signature(asynchronous[name]), name
        assert inspect.iscoroutinefunction(asynchronous[name]), name


def schema(name: str) -> dict[str, Any]:
    return DOCUMENT["components"]["schemas"][name]


def sample(node: dict[str, Any]) -> Any:
    """A value of the shape `node` (a JSON schema of the document) describes."""
    if "$ref" in node:
        return sample(schema(node["$ref"].rsplit("/", 1)[-1]))
    for alternative in node.get("anyOf", ()):
        if alternative.get("type") != "null":
            return sample(alternative)
    kind = node.get("type")
    if kind == "object" or "properties" in node:
        return {name: sample(part) for name, part in node.get("properties", {}).items()}
    if kind == "array":
        return [sample(node.get("items", {}))]
    if kind == "string":
        return "2026-12-01T12:00:00Z" if node.get("format") == "date-time" else node.get("enum", ["text"])[0]
    return {"integer": 7, "number": 1.5, "boolean": True}.get(kind, {"any": "json"})


@pytest.mark.parametrize("model", SCHEMAS, ids=lambda model: model.__name__)
def test_each_resource_declares_its_schemas_fields_and_reads_their_shape(model: type[Any]):
    declared = {f for f in model.__dataclass_fields__ if f != "raw"}
    for name in SCHEMAS[model]:
        fields = set(schema(name)["properties"])
        assert fields <= declared, f"{model.__name__} lacks {sorted(fields - declared)} of {name}"
        body = {**sample(schema(name)), "added_by_a_newer_server": [1, 2]}
        read = model.from_json(body)
        assert read.raw == body and read.added_by_a_newer_server == [1, 2]  # kept, and readable untyped
        for field_name in fields:
            value = getattr(read, field_name)
            assert value is not None, (name, field_name)
            if schema(name)["properties"][field_name].get("format") == "date-time":
                assert value.tzinfo is not None, (name, field_name)
    with pytest.raises(AttributeError):
        model.from_json(sample(schema(SCHEMAS[model][0]))).nothing_like_this  # noqa: B018


def test_an_events_data_is_a_transition_or_a_workflows_end_by_its_shape():
    transition = models.Event.from_json(sample(schema("EventOut")))
    assert isinstance(transition.data, models.TransitionEvent)
    ended = models.Event.from_json({**sample(schema("EventOut")), "type": "workflow.failed",
                                    "data": sample(schema("WorkflowEventOut"))})
    assert isinstance(ended.data, models.WorkflowEvent)
    assert ended.data.state == "SUCCEEDED" and ended.data.completed_at.tzinfo is not None
