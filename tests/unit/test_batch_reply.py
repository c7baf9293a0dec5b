"""A batch call's reply read as the outcome of each of its jobs (app/delivery/dispatch.py
classify_batch), and the batch request's body and headers."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import uuid4

import orjson
from standardwebhooks.webhooks import Webhook

from app.delivery.dispatch import batch_headers, batch_request_body, classify_batch, request_body
from app.delivery.transport import Reply
from app.domain.dispatch import ClaimedJob, OutcomeKind
from app.domain.signing import new_handler_secret


def job() -> ClaimedJob:
    now = datetime.now(UTC)
    return ClaimedJob(
        id=uuid4(), job_id="j", job_type="DELAYED", queue="default", attempt=0, max_attempts=5, payload={"n": 1},
        parameters=None, metadata=None, scheduled_at=now, started_at=now, deadline_at=now + timedelta(seconds=10),
        seconds_left=10.0, handler="h", handler_url="http://h/", handler_secret=new_handler_secret())


def reply(document: Any, status: int = 200, **extra: Any) -> Reply:
    return Reply(status, "OK", orjson.dumps(document), **extra)


def test_each_job_takes_its_own_entry_and_one_left_out_failed() -> None:
    a, b, c, d = job(), job(), job(), job()
    outcomes = classify_batch(reply({"outcomes": [
        {"execution_id": str(uuid4()), "outcome": "failed"},  # not in the call: ignored
        {"execution_id": str(b.id), "outcome": "failed", "error": {"type": "bad_row", "message": "row 3"},
         "retryable": False},
        {"execution_id": str(a.id), "outcome": "succeeded", "result": {"ok": True}},
        {"execution_id": str(a.id), "outcome": "failed"},  # a repeat: the first stands
        {"execution_id": str(d.id), "outcome": "failed", "error": "plain text"},
    ]}), [a, b, c, d], 60.0)
    assert [o.kind for o in outcomes] == [OutcomeKind.SUCCEEDED, OutcomeKind.FAILED, OutcomeKind.FAILED,
                                          OutcomeKind.FAILED]
    assert outcomes[0].result == {"ok": True} and outcomes[0].http_status == 200
    assert (outcomes[1].error_type, outcomes[1].error, outcomes[1].retryable) == ("bad_row", "row 3", False)
    assert outcomes[2].error_type == "handler_failed" and "no outcome" in (outcomes[2].error or "")
    assert (outcomes[3].error_type, outcomes[3].error, outcomes[3].retryable) == ("handler_failed", "plain text", True)
    assert not any(o.shared for o in outcomes)


def test_a_reported_abandoned_type_or_an_unknown_outcome_is_a_handler_failure() -> None:
    a, b = job(), job()
    outcomes = classify_batch(reply({"outcomes": [
        {"execution_id": str(a.id), "outcome": "failed", "error": {"type": "abandoned_deadline", "message": "x"}},
        {"execution_id": str(b.id), "outcome": "maybe"},
    ]}), [a, b], 60.0)
    assert [(o.kind, o.error_type) for o in outcomes] == [(OutcomeKind.FAILED, "handler_failed")] * 2
    assert "maybe" in (outcomes[1].error or "")


def test_a_result_that_cannot_be_stored_fails_its_job_only() -> None:
    a, b = job(), job()
    outcomes = classify_batch(reply({"outcomes": [
        {"execution_id": str(a.id), "outcome": "succeeded", "result": {"a\u0000b": 1}},
        {"execution_id": str(b.id), "outcome": "succeeded"},
    ]}), [a, b], 60.0)
    assert outcomes[0].kind is OutcomeKind.FAILED and "cannot be stored" in (outcomes[0].error or "")
    assert outcomes[1].kind is OutcomeKind.SUCCEEDED and outcomes[1].result is None


def test_a_reply_of_the_whole_call_is_every_jobs_shared_outcome() -> None:
    jobs = [job(), job(), job()]
    for answer, kind in ((Reply(503, "Unavailable", b"", headers={"retry-after": "3"}), OutcomeKind.FAILED),
                         (Reply(202, "Accepted", b""), OutcomeKind.ACCEPTED),
                         (Reply(200, "OK", b"x" * 10, too_large=True), OutcomeKind.FAILED),
                         (Reply(200, "OK", b"not json"), OutcomeKind.FAILED),
                         (reply({"result": 1}), OutcomeKind.FAILED)):
        outcomes = classify_batch(answer, jobs, 60.0)
        assert len(outcomes) == 3 and outcomes[0] is outcomes[1] is outcomes[2]
        assert outcomes[0].kind is kind and outcomes[0].shared
    assert classify_batch(Reply(503, "Unavailable", b"", headers={"retry-after": "3"}), jobs, 60.0)[0].retry_after == 3


def test_the_batch_body_holds_each_jobs_own_body_and_is_signed_once_with_the_first_id_and_count() -> None:
    secret = new_handler_secret()
    jobs = [job(), job()]
    bodies = [request_body(j, f"http://jw/v1/executions/{j.id}", f"0.t{i}") for i, j in enumerate(jobs)]
    body = batch_request_body(bodies)
    assert orjson.loads(body) == {"executions": [orjson.loads(b) for b in bodies]}
    headers = batch_headers(secret, jobs, body)
    assert headers["webhook-id"] == f"{jobs[0].id}+2" and "jobwire-attempt" not in headers
    Webhook(secret).verify(body, headers)
