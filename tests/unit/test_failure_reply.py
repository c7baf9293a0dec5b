"""A failing reply's JSON body `{"error": {"type", "message"}, "retryable"?}` as classify reads it
(DESIGN §5): the attempt's error_type, last_error and retryability; any other body keeps the
status line and the body's start, error_type http_status. The toolkit's own rule for the types
it sends is the service's, so a failure reads alike in the reply and in a completion."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from app.api.app import create_api
from app.delivery.dispatch import classify
from app.delivery.transport import Reply
from app.domain.dispatch import OutcomeKind
from app.domain.executions import ErrorType
from app.domain.failure_reply import recordable_error_type
from jobwire.handler._outcome import FALLBACK_TYPE, error_type_of


def reply(status: int, body: Any, *, raw: bytes | None = None, headers: dict[str, str] | None = None) -> Reply:
    return Reply(status, "Reason", orjson.dumps(body) if raw is None else raw, headers=headers or {})


def failure(error_type: Any = "card_declined", message: Any = "the card was declined", **extra: Any) -> dict[str, Any]:
    return {"error": {"type": error_type, "message": message}, **extra}


@pytest.mark.parametrize("status", [400, 404, 409, 422, 500, 502, 301])
def test_a_failure_body_names_the_attempts_error_on_any_status_but_2xx(status: int) -> None:
    outcome = classify(reply(status, failure()), 3600.0)
    assert (outcome.kind, outcome.error_type, outcome.error, outcome.retryable, outcome.http_status) == (
        OutcomeKind.FAILED, "card_declined", "the card was declined", True, status)


def test_retryable_false_ends_the_execution_and_true_leaves_it_to_the_attempts() -> None:
    assert classify(reply(500, failure(retryable=False)), 3600.0).retryable is False
    assert classify(reply(500, failure(retryable=True)), 3600.0).retryable is True


def test_members_beside_the_failure_are_ignored_so_a_problem_document_carries_it() -> None:
    body = {"type": "about:blank", "title": "Handler failed", "status": 500, "detail": "x", **failure()}
    outcome = classify(reply(500, body), 3600.0)
    assert (outcome.error_type, outcome.error) == ("card_declined", "the card was declined")


@pytest.mark.parametrize("error_type", [
    "abandoned_deadline", "abandoned_anything", "", "card declined", "_Private", "Ärger", "x" * 101, "a\n", "-a"])
def test_a_type_jobwire_does_not_record_leaves_http_status_and_keeps_the_message(error_type: str) -> None:
    outcome = classify(reply(422, failure(error_type=error_type, retryable=False)), 3600.0)
    assert (outcome.error_type, outcome.error, outcome.retryable) == (
        ErrorType.HTTP_STATUS, "the card was declined", False)


def test_the_message_is_stripped_of_nul_and_truncated_as_every_handler_text() -> None:
    outcome = classify(reply(500, failure(message="bad\x00 input " + "x" * 5000)), 3600.0)
    assert outcome.error is not None and "\x00" not in outcome.error
    assert outcome.error.startswith("bad input x") and outcome.error.endswith("…[truncated 3010 chars]")


def test_an_empty_message_is_the_status_line() -> None:
    assert classify(reply(503, failure(message="")), 3600.0).error == "HTTP 503 Reason"


def test_retry_after_still_sets_the_delay_beside_a_failure_body() -> None:
    outcome = classify(reply(429, failure(), headers={"retry-after": "7"}), 3600.0)
    assert (outcome.error_type, outcome.retry_after) == ("card_declined", 7.0)


@pytest.mark.parametrize("body", [
    pytest.param(b"", id="no-body"),
    pytest.param(b"boom", id="not-json"),
    pytest.param(b'["error"]', id="an-array"),
    pytest.param(b'{"error": "bad signature"}', id="error-a-string"),
    pytest.param(b'{"error": {"message": "no type"}}', id="no-type"),
    pytest.param(b'{"error": {"type": "t"}}', id="no-message"),
    pytest.param(b'{"error": {"type": 7, "message": "m"}}', id="type-a-number"),
    pytest.param(b'{"error": {"type": "t", "message": null}}', id="message-null"),
    pytest.param(b'{"error": {"type": "t", "message": "m"}, "retryable": "no"}', id="retryable-a-string"),
    pytest.param(b'{"error": {"type": "t", "message": "m"}, "retryable": 0}', id="retryable-a-number"),
])
def test_any_other_body_is_recorded_as_before(body: bytes) -> None:
    outcome = classify(reply(500, None, raw=body), 3600.0)
    assert (outcome.kind, outcome.error_type, outcome.retryable) == (OutcomeKind.FAILED, ErrorType.HTTP_STATUS, True)
    assert outcome.error == f"HTTP 500 Reason: {body.decode()}".rstrip(": ")


def test_a_2xx_and_a_202_are_read_as_before_whatever_their_body() -> None:
    assert classify(reply(200, {"result": 1, **failure()}), 3600.0).kind == OutcomeKind.SUCCEEDED
    assert classify(reply(202, failure()), 3600.0).kind == OutcomeKind.ACCEPTED


@given(st.binary(max_size=300) | st.recursive(
    st.none() | st.booleans() | st.integers(-(2**63), 2**63 - 1) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
        st.sampled_from(["error", "type", "message", "retryable", "x"]), inner, max_size=4),
    max_leaves=12).map(orjson.dumps))
def test_any_failing_body_is_a_failed_attempt_never_an_exception(body: bytes) -> None:
    outcome = classify(Reply(500, "Internal Server Error", body), 3600.0)
    assert outcome.kind == OutcomeKind.FAILED and outcome.error is not None and "\x00" not in outcome.error
    assert outcome.error_type == ErrorType.HTTP_STATUS or recordable_error_type(outcome.error_type or "")


@given(st.text(max_size=140))
@example("ValueError")
@example("abandoned_deadline")
@example("x" * 150)
@example("Ärger")
def test_the_toolkit_sends_only_types_jobwire_records_and_each_as_given_when_it_can(name: str) -> None:
    sent = error_type_of(name)
    assert recordable_error_type(sent)
    assert sent == (name[:100] if recordable_error_type(name[:100]) else FALLBACK_TYPE)


def test_the_webhooks_section_documents_the_failure_body() -> None:
    document = create_api(max_request_bytes=1).openapi()
    replies = document["webhooks"]["jobDispatch"]["post"]["responses"]
    for status in ("429", "503", "4XX", "5XX"):
        assert replies[status]["content"]["application/json"]["schema"] == {
            "$ref": "#/components/schemas/HandlerFailure"}
    schema = document["components"]["schemas"]["HandlerFailure"]
    assert schema["required"] == ["error"] and schema["properties"]["retryable"]["default"] is True
    assert set(document["components"]["schemas"]["HandlerFailureError"]["required"]) == {"type", "message"}
