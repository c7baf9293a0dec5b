"""The structured fields of a log line, passed as `extra=fields(...)`.

Every line about an execution carries them (execution_id, attempt, handler, queue, node,
error_type, duration_ms, …); the composition root's formatter writes them after the message in
text (`key=value`) or as members of the JSON object (JOBWIRE_LOG_FORMAT=json). Fields that are
None are left out.
"""

from __future__ import annotations

from typing import Any

KEY = "jobwire"


def fields(**values: Any) -> dict[str, dict[str, Any]]:
    """`extra` for a logging call: log.warning("attempt failed", extra=fields(execution_id=…))."""
    return {KEY: {name: value for name, value in values.items() if value is not None}}
