"""The document's `webhooks` section describes the request Jobwire really sends to a handler
(app/delivery/dispatch.py) and the replies it understands."""

from __future__ import annotations

import uuid
from dataclasses import replace
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import orjson
from pydantic import TypeAdapter

from app.api.app import create_api
from app.api.webhooks.models import DispatchRequest
from app.domain.dispatch import ClaimedJob
from app.domain.signing import new_handler_secret
from app.delivery.dispatch import request_body, signed_headers

WEBHOOK = create_api(max_request_bytes=1).openapi()["webhooks"]["jobDispatch"]["post"]


def claimed(**overrides: Any) -> ClaimedJob:
    now = datetime.now(timezone(timedelta(hours=2)))  # the body is written in UTC whatever it is given
    job = ClaimedJob(
        id=uuid.uuid4(), job_id="resize-42", job_type="CRON", queue="images", attempt=2, max_attempts=5,
        payload={"x": [1, "ü", None]}, parameters={"p": 1}, metadata=None, scheduled_at=now, started_at=now,
        deadline_at=now + timedelta(seconds=30), seconds_left=30.0, handler="h", handler_url="http://127.0.0.1:9/h",
        handler_secret=new_handler_secret())
    return replace(job, **overrides)


def test_the_body_jobwire_sends_is_exactly_the_documented_dispatch_request() -> None:
    job = claimed()
    body = request_body(job, f"https://jobwire.example.com/v1/executions/{job.id}", "2.mac")
    sent = TypeAdapter(DispatchRequest).validate_json(body, strict=True)  # no field missing, none extra
    assert sent.execution_id == job.id and sent.attempt == 2 and sent.callback.token == "2.mac"
    assert all(t.utcoffset() == timedelta(0) for t in (sent.scheduled_at, sent.started_at, sent.deadline))
    assert WEBHOOK["requestBody"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/DispatchRequest"}
    assert set(DispatchRequest.model_json_schema()["required"]) == set(orjson.loads(body))


def test_the_documented_headers_are_the_ones_each_dispatch_carries() -> None:
    job = claimed(payload=None, parameters=None)
    body = request_body(job, "http://x/v1/executions/1", "0.t")
    headers = signed_headers(job.handler_secret or "", job, body, now=datetime.now(UTC).timestamp())
    documented = {p["name"].lower(): p for p in WEBHOOK["parameters"]}
    assert all(p["in"] == "header" and p["required"] for p in documented.values())
    assert set(documented) == set(headers) - {"content-type"}
    assert documented["webhook-id"]["schema"]["format"] == "uuid" and headers["webhook-id"] == str(job.id)
    assert documented["jobwire-attempt"]["schema"]["type"] == "integer" and headers["jobwire-attempt"] == "2"


def test_the_replies_a_handler_may_give_are_documented() -> None:
    replies = WEBHOOK["responses"]
    assert set(replies) == {"200", "202", "429", "503", "4XX", "5XX"}
    assert replies["200"]["content"]["application/json"]["schema"] == {"$ref": "#/components/schemas/HandlerReply"}
    assert "content" not in replies["202"]
    assert all("Retry-After" in replies[status]["headers"] for status in ("429", "503"))
    assert WEBHOOK["operationId"] == "dispatchJob" and WEBHOOK["tags"] == ["dispatch"]


BATCH = create_api(max_request_bytes=1).openapi()["webhooks"]["jobBatchDispatch"]["post"]


def test_the_batch_body_and_headers_are_the_documented_batch_dispatch() -> None:
    from app.api.webhooks.models import BatchDispatchRequest
    from app.delivery.dispatch import batch_headers, batch_request_body

    jobs = [claimed(), claimed(attempt=0)]
    body = batch_request_body([request_body(j, f"http://x/v1/executions/{j.id}", "0.t") for j in jobs])
    sent = TypeAdapter(BatchDispatchRequest).validate_json(body, strict=True)
    assert [e.execution_id for e in sent.executions] == [j.id for j in jobs]
    headers = batch_headers(jobs[0].handler_secret or "", jobs, body, now=datetime.now(UTC).timestamp())
    documented = {p["name"].lower() for p in BATCH["parameters"]}
    assert documented == set(headers) - {"content-type"}
    assert BATCH["operationId"] == "dispatchJobs"
    assert BATCH["responses"]["200"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/BatchReply"}
