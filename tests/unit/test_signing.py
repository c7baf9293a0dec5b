"""Webhook signatures verified by the Standard Webhooks library as is; callback tokens."""

from __future__ import annotations

import base64
import dataclasses
import time
import uuid
from datetime import UTC, datetime, timedelta

import orjson
import pytest
from standardwebhooks.webhooks import Webhook, WebhookVerificationError

from app.domain.dispatch import ClaimedJob
from app.domain.signing import (
    SECRET_PREFIX,
    callback_token,
    new_handler_secret,
    new_server_key,
    sign_webhook,
    verify_callback_token,
)
from app.delivery.dispatch import request_body, signed_headers


def claimed_job(attempt: int = 2) -> ClaimedJob:
    now = datetime.now(UTC)
    return ClaimedJob(
        id=uuid.uuid4(), job_id="report-42", job_type="DELAYED", queue="default", attempt=attempt,
        max_attempts=5, payload={"x": [1, "ü", None]}, parameters=None, metadata={"k": "v"},
        scheduled_at=now, started_at=now, deadline_at=now + timedelta(seconds=120), seconds_left=120.0,
        handler="h", handler_url="http://127.0.0.1:9/h", handler_secret=new_handler_secret(),
    )


def signed(job: ClaimedJob, now: float | None = None) -> tuple[bytes, dict[str, str]]:
    assert job.handler_secret is not None
    body = request_body(job, f"http://127.0.0.1:8000/v1/executions/{job.id}", "2.token")
    return body, signed_headers(job.handler_secret, job, body, now)


def test_handler_secret_is_whsec_prefixed_base64_of_32_bytes() -> None:
    secret = new_handler_secret()
    assert secret.startswith(SECRET_PREFIX)
    assert len(base64.b64decode(secret.removeprefix(SECRET_PREFIX))) == 32


def test_standardwebhooks_library_verifies_the_dispatch_signature() -> None:
    job = claimed_job()
    body, headers = signed(job)
    verified = Webhook(job.handler_secret).verify(body, headers)
    assert verified == orjson.loads(body)
    assert verified["execution_id"] == str(job.id)


def test_webhook_id_is_the_execution_id_on_every_attempt_and_the_attempt_has_its_own_header() -> None:
    job = claimed_job(attempt=3)
    _, headers = signed(job, now=1_800_000_000)
    assert headers["webhook-id"] == str(job.id) and "." not in headers["webhook-id"]
    assert headers["jobwire-attempt"] == "3"
    _, again = signed(dataclasses.replace(job, attempt=4), now=1_800_000_000)
    assert again["webhook-id"] == headers["webhook-id"] and again["jobwire-attempt"] == "4"
    assert headers["webhook-timestamp"] == "1800000000"
    assert headers["webhook-signature"].startswith("v1,")
    assert headers["content-type"] == "application/json"


def test_tampered_body_fails_standardwebhooks_verification() -> None:
    job = claimed_job()
    body, headers = signed(job)
    with pytest.raises(WebhookVerificationError):
        Webhook(job.handler_secret).verify(body.replace(b"report-42", b"report-43"), headers)


def test_another_handlers_secret_fails_standardwebhooks_verification() -> None:
    job = claimed_job()
    body, headers = signed(job)
    with pytest.raises(WebhookVerificationError):
        Webhook(new_handler_secret()).verify(body, headers)


def test_signature_covers_the_webhook_id() -> None:
    job = claimed_job()
    body, headers = signed(job)
    with pytest.raises(WebhookVerificationError):
        Webhook(job.handler_secret).verify(body, {**headers, "webhook-id": str(uuid.uuid4())})


def test_signature_covers_the_timestamp() -> None:
    job = claimed_job()
    body, headers = signed(job, now=time.time())
    moved = str(int(headers["webhook-timestamp"]) - 1)
    with pytest.raises(WebhookVerificationError):
        Webhook(job.handler_secret).verify(body, {**headers, "webhook-timestamp": moved})


def test_one_signature_per_secret_space_separated_each_verifies_alone() -> None:
    old, new = new_handler_secret(), new_handler_secret()
    job = claimed_job()
    body = request_body(job, "http://x/cb", "t")
    headers = signed_headers([new, old], job, body)
    signatures = headers["webhook-signature"].split(" ")
    assert len(signatures) == 2 and all(s.startswith("v1,") for s in signatures)
    assert signatures[0] == sign_webhook(new, headers["webhook-id"], int(headers["webhook-timestamp"]), body)
    for secret in (old, new):
        assert Webhook(secret).verify(body, headers)["execution_id"] == str(job.id)
    with pytest.raises(WebhookVerificationError):
        Webhook(new_handler_secret()).verify(body, headers)


def test_callback_token_round_trip_yields_its_attempt() -> None:
    key, execution_id = new_server_key(), uuid.uuid4()
    for attempt in (0, 1, 7, 123):
        assert verify_callback_token(key, execution_id, callback_token(key, execution_id, attempt)) == attempt


def test_callback_token_shape_is_attempt_dot_unpadded_base64url_mac() -> None:
    key, execution_id = new_server_key(), uuid.uuid4()
    token = callback_token(key, execution_id, 4)
    attempt, _, mac = token.partition(".")
    assert attempt == "4"
    assert "=" not in mac and "+" not in mac and "/" not in mac
    assert len(base64.urlsafe_b64decode(mac + "=" * (-len(mac) % 4))) == 32


def test_another_executions_token_is_refused() -> None:
    key = new_server_key()
    token = callback_token(key, uuid.uuid4(), 0)
    assert verify_callback_token(key, uuid.uuid4(), token) is None


def test_token_from_another_server_key_is_refused() -> None:
    execution_id = uuid.uuid4()
    token = callback_token(new_server_key(), execution_id, 0)
    assert verify_callback_token(new_server_key(), execution_id, token) is None


def test_token_with_its_attempt_changed_is_refused() -> None:
    key, execution_id = new_server_key(), uuid.uuid4()
    _, _, mac = callback_token(key, execution_id, 1).partition(".")
    assert verify_callback_token(key, execution_id, f"2.{mac}") is None


def test_token_with_a_tampered_mac_is_refused() -> None:
    key, execution_id = new_server_key(), uuid.uuid4()
    token = callback_token(key, execution_id, 1)
    flipped = token[:-1] + ("A" if token[-1] != "A" else "B")
    assert verify_callback_token(key, execution_id, flipped) is None


@pytest.mark.parametrize(
    "token", ["", ".", "1", "1.", "x.abc", "-1.abc", "1.2.3", "9999999999.abc", " 1.abc", "\u0661.abc"])
def test_malformed_tokens_are_refused(token: str) -> None:
    assert verify_callback_token(new_server_key(), uuid.uuid4(), token) is None


def test_the_request_body_gives_times_in_utc_with_a_z_and_embeds_stored_json_as_is() -> None:
    import dataclasses
    from datetime import timezone

    import orjson

    job = claimed_job()
    berlin = timezone(timedelta(hours=1))
    job = dataclasses.replace(job, scheduled_at=datetime(2026, 11, 30, 4, 0, 0, 250000, tzinfo=berlin),
                              payload=orjson.Fragment(b'{"a": [1, 2]}'))
    body = orjson.loads(request_body(job, "http://x/cb", "t"))
    assert body["scheduled_at"] == "2026-11-30T03:00:00.250000Z"
    assert body["started_at"].endswith("Z") and body["deadline"].endswith("Z")
    assert datetime.fromisoformat(body["deadline"]) == job.deadline_at
    assert body["payload"] == {"a": [1, 2]}
