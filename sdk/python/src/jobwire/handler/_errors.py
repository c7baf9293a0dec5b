"""The exceptions a handler raises or meets: Permanent (no retry) and CallbackError."""

from __future__ import annotations


class Permanent(Exception):
    """Raise it from `handle` to fail the attempt with no retry: the execution dead-letters at
    once, whatever attempts remain. For failures another attempt cannot fix (a malformed
    payload, a refused card). `error_type` names the failure on the attempt (default the
    class name, `Permanent`): a name as handlers are named, cut to 100 characters; another
    (or one beginning with `abandoned_`, Jobwire's own) is sent as `handler_failed`."""

    def __init__(self, message: str = "", *, error_type: str | None = None) -> None:
        super().__init__(message)
        self.error_type = error_type


class CallbackError(Exception):
    """A callback Jobwire refused (`status`: its HTTP status), or that got no answer it could use
    (no answer, 429, 502, 503, 504) until the attempt's deadline (`gave_up`; `status`: the last
    answer's, None for none). Raised by `ctx.run_step_once`; the toolkit's own callbacks
    (progress, logs, heartbeats) log it and carry on."""

    def __init__(self, message: str, status: int | None = None, *, gave_up: bool = False) -> None:
        super().__init__(message)
        self.status = status
        self.gave_up = gave_up
