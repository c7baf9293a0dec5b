"""What the client raises when Jobwire refuses a request, cannot be reached, or answers in a way
the client cannot read.

`Unavailable` is a `ProblemError`, not a sibling: a 503 is a refusal like any other (an RFC 9457
problem, with its status and body), so `except ProblemError` is enough for code that only wants
to know the call did not succeed, while `except Unavailable` picks out the failures that sending
again later may cure. A connection failure carries no HTTP status (`status` is None) and its
cause is the transport's exception (`__cause__`). `maybe_applied` tells the one case where the
call may have taken effect all the same: the request went out, its reply was lost, and sending it
again would not be harmless (the message says how to find out what happened).

`InvalidResponse` is apart from both: something answered 2xx, but not with what Jobwire sends (a
web server at the wrong URL, a proxy's page), so whether the call took effect is unknown.
"""

from __future__ import annotations

from typing import Any


class JobwireError(Exception):
    """Everything the client raises about an exchange with Jobwire."""


class ProblemError(JobwireError):
    """Jobwire answered 4xx or 5xx. `errors` lists `{field, message}` (a 422 names every field at
    fault, e.g. `jobs[3].payload`); `body` is the decoded response (a dict for problem+json, else
    the text)."""

    def __init__(self, status: int | None, title: str, detail: str | None = None, *,
                 errors: list[dict[str, Any]] | None = None, body: Any = None, type: str | None = None) -> None:
        self.status = status
        self.title = title
        self.detail = detail
        self.errors = list(errors or [])
        self.body = body
        self.type = type
        super().__init__(self._message())

    def _message(self) -> str:
        head = f"{self.status} {self.title}" if self.status is not None else self.title
        return f"{head}: {self.detail}" if self.detail and self.detail != self.title else head

    @property
    def fields(self) -> list[str]:
        """The `field` of every error, in order."""
        return [str(error.get("field")) for error in self.errors]

    @property
    def is_problem_document(self) -> bool:
        """Whether the answer was an RFC 9457 problem (Jobwire's refusals are), rather than a page
        some other server or proxy sent."""
        return isinstance(self.body, dict) and "title" in self.body


class Unavailable(ProblemError):
    """Jobwire answered 503, or could not be reached, on every try the retry policy allowed; or the
    reply to a request that must not be sent twice was lost (`maybe_applied`)."""

    def __init__(self, status: int | None, title: str, detail: str | None = None, *,
                 errors: list[dict[str, Any]] | None = None, body: Any = None, type: str | None = None,
                 maybe_applied: bool = False) -> None:
        super().__init__(status, title, detail, errors=errors, body=body, type=type)
        self.maybe_applied = maybe_applied


class InvalidResponse(JobwireError):
    """A 2xx answer that is not what Jobwire sends: not JSON, or not the shape of the resource.
    `status`, `content_type` and `body` (the text) are what came back."""

    def __init__(self, message: str, *, status: int, content_type: str | None, body: str) -> None:
        super().__init__(message)
        self.status = status
        self.content_type = content_type
        self.body = body
