"""FlowRepository: the flow state replies move (job_handler_flow, job_keys): read under a row lock,
written back whole (app/services/flow.py decides)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from app.db.database import Connection
from app.db.queries import load
from app.db.statements import execute, fetch
from app.domain.flow import Adaptive, Circuit, CircuitState

Q = load("flow.sql")


@dataclass(frozen=True, slots=True)
class HandlerFlow:
    handler: str
    circuit: Circuit
    adaptive: Adaptive
    adaptive_on: bool  # the handler is adaptive
    ceiling: int  # its max_concurrency
    now: datetime  # database time, read with the row


@dataclass(frozen=True, slots=True)
class KeyFlow:
    handler: str
    key: str
    adaptive: Adaptive


def _adaptive(m: Mapping[str, Any]) -> Adaptive:
    return Adaptive(limit=m["adaptive_limit"], since=m["adaptive_since"], successes=m["adaptive_successes"],
                    slow_start=m["adaptive_slow_start"], refusals=m["refusals"])


def _adaptive_params(items: Sequence[tuple[Adaptive, float | None]]) -> dict[str, list[Any]]:
    """The parallel arrays of a save (flow.sql, fragment adaptive_set), and its Retry-After seconds."""
    return {"adaptive_limits": [a.limit for a, _ in items], "adaptive_sinces": [a.since for a, _ in items],
            "adaptive_successes": [a.successes for a, _ in items],
            "adaptive_slow_starts": [a.slow_start for a, _ in items], "refusals": [a.refusals for a, _ in items],
            "retry_seconds": [seconds for _, seconds in items]}


class FlowRepository:
    async def lock_handlers(self, conn: Connection, handlers: Sequence[str]) -> list[HandlerFlow]:
        """The handlers' flow rows (made if missing), locked until commit, in name order."""
        await execute(conn, Q["flow_handlers_make"], handlers=list(handlers))
        rows = await fetch(conn, Q["flow_handlers_read"], handlers=list(handlers))
        return [HandlerFlow(handler=m["handler"],
                            circuit=Circuit(state=CircuitState(m["circuit_state"]), until=m["circuit_until"],
                                            failures=m["circuit_failures"], open_seconds=m["circuit_open_seconds"]),
                            adaptive=_adaptive(m), adaptive_on=m["adaptive"], ceiling=m["ceiling"], now=m["now"])
                for m in rows]

    async def save_handlers(self, conn: Connection, items: Sequence[tuple[HandlerFlow, float | None]]) -> None:
        """Each handler's new state, and a Retry-After (seconds from now; None: none)."""
        await execute(
            conn, Q["flow_handlers_save"],
            handlers=[f.handler for f, _ in items],
            circuit_states=[f.circuit.state.value for f, _ in items],
            circuit_untils=[f.circuit.until for f, _ in items],
            circuit_failures=[f.circuit.failures for f, _ in items],
            circuit_open_seconds=[f.circuit.open_seconds for f, _ in items],
            **_adaptive_params([(f.adaptive, seconds) for f, seconds in items]))

    async def lock_keys(self, conn: Connection, keys: Sequence[tuple[str, str]]) -> list[KeyFlow]:
        """The (handler, key) rows (made if missing), locked until commit, in order."""
        handlers, names = [h for h, _ in keys], [k for _, k in keys]
        await execute(conn, Q["flow_keys_make"], handlers=handlers, keys=names)
        rows = await fetch(conn, Q["flow_keys_read"], handlers=handlers, keys=names)
        return [KeyFlow(handler=m["handler"], key=m["key"], adaptive=_adaptive(m)) for m in rows]

    async def save_keys(self, conn: Connection, items: Sequence[tuple[KeyFlow, float | None]]) -> None:
        await execute(
            conn, Q["flow_keys_save"],
            handlers=[f.handler for f, _ in items], keys=[f.key for f, _ in items],
            **_adaptive_params([(f.adaptive, seconds) for f, seconds in items]))
