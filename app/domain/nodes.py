"""Nodes: the running Jobwire processes, as their heartbeats show them."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime


@dataclass(frozen=True, slots=True)
class Node:
    server_id: str
    started_at: datetime
    last_heartbeat: datetime
    in_flight: int
    queues: list[str] | None = None  # the queues it claims from; None: every queue
