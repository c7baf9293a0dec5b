"""Domain errors. They carry no HTTP codes: app/api maps them."""

from __future__ import annotations

from dataclasses import dataclass, field


class JobwireError(Exception):
    """Base of every error the domain and services raise on purpose."""


class NotFound(JobwireError):
    def __init__(self, kind: str, key: object) -> None:
        super().__init__(f"{kind} {key!s} not found")
        self.kind = kind
        self.key = key


class InvalidTransition(JobwireError):
    """The execution is not in a state this operation accepts (zero rows matched)."""

    def __init__(self, operation: str, state: str) -> None:
        super().__init__(f"cannot {operation} an execution in state {state}")
        self.operation = operation
        self.state = state


class Conflict(JobwireError):
    """The request clashes with stored state (e.g. deleting a handler still in use)."""


@dataclass
class FieldError:
    field: str
    message: str


@dataclass
class ValidationFailed(JobwireError):
    """Input that passed the schema but breaks a rule needing stored state."""

    errors: list[FieldError] = field(default_factory=list)

    def __str__(self) -> str:
        return "; ".join(f"{e.field}: {e.message}" for e in self.errors)


@dataclass
class PayloadTooLarge(JobwireError):
    field: str
    size: int
    limit: int

    def __str__(self) -> str:
        return f"{self.field}: payload, parameters and metadata take {self.size} bytes; the limit is {self.limit}"


class StaleAttempt(JobwireError):
    """A callback for an attempt that is not the execution's current one."""

    def __init__(self, token_attempt: int, current_attempt: int) -> None:
        super().__init__(f"attempt {token_attempt} is not current (current attempt is {current_attempt})")
        self.token_attempt = token_attempt
        self.current_attempt = current_attempt


class Unauthenticated(JobwireError):
    """No credential where one is required."""


class Forbidden(JobwireError):
    """A credential that does not grant this request; `scope` or `queue` names what it lacks
    (an API key without the scope, or limited to other queues), None for a bad callback token."""

    def __init__(self, message: str, *, scope: str | None = None, queue: str | None = None) -> None:
        super().__init__(message)
        self.scope = scope
        self.queue = queue


class DatabaseUnavailable(JobwireError):
    """PostgreSQL cannot be reached (or dropped the connection); retry later."""


class DatabaseContention(JobwireError):
    """A transaction kept losing to concurrent ones (a serialization failure or a deadlock,
    SQLSTATE 40001 or 40P01) however often it was tried; the request may be sent again."""
