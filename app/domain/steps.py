"""Run-step-once: a step's recorded result, kept for every later attempt of its execution."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any


@dataclass(frozen=True, slots=True)
class Step:
    name: str
    result: Any
    completed_at: datetime
