"""`client.executions.signal` and `client.executions.signals` against a live node, with both
clients: a signal is a durable mailbox, kept until a wait names it (the toolkit's side, a handler
that suspends until one, is in test_handler_toolkit.py), listed oldest first in pages, and refused
once the execution has finished."""

from __future__ import annotations

from typing import Any
from uuid import uuid4

import pytest

from jobwire import ProblemError, Signal, SignalSent


async def test_signals_are_kept_listed_oldest_first_and_refused_once_the_execution_is_finished(client: Any) -> None:
    later = await client.jobs.enqueue("echo", delay_seconds=3600)
    first = await client.executions.signal(later.id, "approved", {"by": "ana", "amount": 2**63})
    second = await client.executions.signal(later.id, "note")
    assert isinstance(first, SignalSent) and (first.woke, second.woke) == (False, False)  # nothing waits: kept
    assert second.id > first.id
    listed = await client.executions.signals(later.id, limit=1)  # one a page, followed to the end
    assert all(isinstance(s, Signal) for s in listed)
    assert [(s.id, s.name, s.payload, s.consumed_at) for s in listed] == [
        (first.id, "approved", {"by": "ana", "amount": 2**63}, None), (second.id, "note", None, None)]
    assert listed[0].sent_at.tzinfo is not None

    await client.executions.cancel(later.id)
    with pytest.raises(ProblemError) as finished:
        await client.executions.signal(later.id, "approved")
    assert finished.value.status == 409
    with pytest.raises(ProblemError) as unknown:
        await client.executions.signal(str(uuid4()), "approved")
    assert unknown.value.status == 404
    with pytest.raises(ProblemError) as unnamed:
        await client.executions.signal(later.id, "no way")
    assert unnamed.value.status == 422


async def test_a_signal_payload_over_64_kib_is_refused(client: Any) -> None:
    later = await client.jobs.enqueue("echo", delay_seconds=3600)
    with pytest.raises(ProblemError) as large:
        await client.executions.signal(later.id, "big", "x" * 70_000)
    assert large.value.status == 413
    assert await client.executions.signals(later.id) == []
