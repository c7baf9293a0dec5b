"""What the client raises when Jobwire refuses a request or cannot be reached.

`Unavailable` is a `ProblemError`, not a sibling: a 503 is a refusal like any other (an RFC 9457
problem, with its status and body), so `except ProblemError` is enough for code that only wants
to know the call did not happen, while `except Unavailable` picks out the one kind of failure
that sending again later may cure. A connection failure carries no HTTP status (`status` is None)
and its cause is the transport's exception (`__cause__`).
"""

from __future__ import annotations

from typing import Any


class ProblemError(Exception):
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


class Unavailable(ProblemError):
    """Jobwire answered 503, or could not be reached, on every try the retry policy allowed (or on
    the first, for a request that must not be sent twice)."""
