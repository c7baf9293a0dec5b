"""The exceptions a handler raises or meets: Permanent (no retry) and CallbackError."""

from __future__ import annotations


class Permanent(Exception):
    """Raise it from `handle` to fail the attempt with no retry: the execution dead-letters at
    once, whatever attempts remain. For failures another attempt cannot fix (a malformed
    payload, a refused card). `error_type` names the failure on the attempt (default
    `Permanent`, at most 100 characters)."""

    def __init__(self, message: str = "", *, error_type: str | None = None) -> None:
        super().__init__(message)
        self.error_type = error_type


class CallbackError(Exception):
    """A callback Jobwire refused (`status`: its HTTP status) or that got no answer (`status`
    None). Raised by `ctx.run_step_once`; the toolkit's own callbacks (progress, logs,
    heartbeats) log it and carry on."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status
