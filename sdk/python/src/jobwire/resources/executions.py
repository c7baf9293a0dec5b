"""`client.executions`: read executions, follow them to the end, change their state, signal them,
act on many."""

from __future__ import annotations

import builtins
from collections.abc import AsyncIterator, Iterator, Mapping
from datetime import datetime
from typing import Any, Literal, Unpack, overload

from jobwire._protocol import Call, Plan, listed, nothing, paged, path, wait
from jobwire.models import (Attempt, Blockers, BulkDryRun, BulkResult, Event, Execution, LogEntry, Page, Signal,
                            SignalSent)
from jobwire.resources._driver import AsyncDriver, Driver, share_docs
from jobwire.types import ExecutionFilters, Id, Selection


def get_execution(execution_id: Id) -> Call[Execution]:
    return Call("getExecution", "GET", path("executions", execution_id), Execution.from_json, name=str(execution_id))


def list_executions(filters: ExecutionFilters, cursor: str | None = None) -> Call[Page[Execution]]:
    params: dict[str, Any] = {**filters, "cursor": cursor}
    for name in ("created_after", "created_before"):
        if isinstance(params.get(name), datetime):
            params[name] = params[name].isoformat()
    if isinstance(params.get("metadata"), tuple):
        key, value = params["metadata"]
        params["metadata"] = f"{key}:{value}"
    return Call("listExecutions", "GET", path("executions"), paged(Execution.from_json), params=params)


def wait_for(execution_id: Id, timeout: float) -> Plan[Execution]:
    return wait(get_execution(execution_id), timeout)


def cancel_execution(execution_id: Id) -> Call[Execution]:
    return Call("cancelExecution", "POST", path("executions", execution_id, "cancel"), Execution.from_json,
                name=str(execution_id))


def retry_execution(execution_id: Id) -> Call[Execution]:
    return Call("retryExecution", "POST", path("executions", execution_id, "retry"), Execution.from_json,
                name=str(execution_id))


def delete_execution(execution_id: Id) -> Call[None]:
    return Call("deleteExecution", "DELETE", path("executions", execution_id), nothing, name=str(execution_id))


def list_attempts(execution_id: Id) -> Call[list[Attempt]]:
    return Call("listExecutionAttempts", "GET", path("executions", execution_id, "attempts"),
                listed(Attempt.from_json), name=str(execution_id))


def list_blockers(execution_id: Id) -> Call[Blockers]:
    return Call("listExecutionBlockers", "GET", path("executions", execution_id, "blockers"), Blockers.from_json,
                name=str(execution_id))


def list_logs(execution_id: Id, limit: int | None) -> Call[Page[LogEntry]]:
    return Call("listExecutionLogs", "GET", path("executions", execution_id, "logs"), paged(LogEntry.from_json),
                params={"limit": limit}, name=str(execution_id))


def list_events(execution_id: Id, limit: int | None) -> Call[Page[Event]]:
    return Call("listExecutionEvents", "GET", path("executions", execution_id, "events"), paged(Event.from_json),
                params={"limit": limit}, name=str(execution_id))


def send_signal(execution_id: Id, name: str, payload: Any) -> Call[SignalSent]:
    return Call("sendSignal", "POST", path("executions", execution_id, "signals", name), SignalSent.from_json,
                body={"payload": payload}, name=str(execution_id))


def list_signals(execution_id: Id, limit: int | None) -> Call[Page[Signal]]:
    return Call("listSignals", "GET", path("executions", execution_id, "signals"), paged(Signal.from_json),
                params={"limit": limit}, name=str(execution_id))


BULK = {"retry": "bulkRetryExecutions", "cancel": "bulkCancelExecutions", "delete": "bulkDeleteExecutions"}


def _bulk_body(selection: Selection | Mapping[str, Any]) -> dict[str, Any]:
    body: dict[str, Any] = {k: v for k, v in selection.items() if v is not None}
    if "ids" in body:
        body["ids"] = [str(i) for i in body["ids"]]
    return body


def bulk(action: str, selection: Selection | Mapping[str, Any]) -> Call[BulkResult]:
    return Call(BULK[action], "POST", path("executions", f"bulk-{action}"), BulkResult.from_json,
                body=_bulk_body(selection))


def bulk_dry_run(action: str, selection: Selection | Mapping[str, Any]) -> Call[BulkDryRun]:
    return Call(BULK[action], "POST", path("executions", f"bulk-{action}"), BulkDryRun.from_json,
                body={**_bulk_body(selection), "dry_run": True})



class Executions:
    """`client.executions`."""

    def __init__(self, driver: Driver) -> None:
        self._driver = driver

    def get(self, execution_id: Id) -> Execution:
        """The execution (404 when there is none)."""
        return self._driver.run(get_execution(execution_id))

    def list(self, **filters: Unpack[ExecutionFilters]) -> Iterator[Execution]:
        """Executions, newest first, following `next_cursor` to the end (filters `state`, `queue`,
        `handler`, `job_id`, `idempotency_key`, `concurrency_key`, `metadata` as `"key:value"` or
        `(key, value)`, and the window `created_after` (at or after) and `created_before` (before);
        `limit` is the page size, default 50, at most 500)."""
        return self._driver.iterate(list_executions(filters))

    def page(self, cursor: str | None = None, **filters: Unpack[ExecutionFilters]) -> Page[Execution]:
        """One page of `list`: pass its `next_cursor` back as `cursor` for the next."""
        return self._driver.run(list_executions(filters, cursor))

    def wait(self, execution_id: Id, timeout: float = 60.0) -> Execution:
        """Poll until the execution is terminal (SUCCEEDED, DEAD_LETTER, CANCELLED, or ABANDONED for
        a cron fire) → that Execution; TimeoutError after `timeout` seconds."""
        return self._driver.run(wait_for(execution_id, timeout))

    def cancel(self, execution_id: Id) -> Execution:
        """ENQUEUED, PROCESSING or WAITING → CANCELLED (409 from other states)."""
        return self._driver.run(cancel_execution(execution_id))

    def retry(self, execution_id: Id) -> Execution:
        """DEAD_LETTER or CANCELLED → ENQUEUED now, as a new attempt (409 from other states)."""
        return self._driver.run(retry_execution(execution_id))

    def delete(self, execution_id: Id) -> None:
        """Delete a finished execution with its logs, steps, signals and events (409 while
        ENQUEUED, PROCESSING or WAITING); its idempotency key is free again."""
        return self._driver.run(delete_execution(execution_id))

    def attempts(self, execution_id: Id) -> builtins.list[Attempt]:
        """Its attempt history, oldest first, each with its own error."""
        return self._driver.run(list_attempts(execution_id))

    def blockers(self, execution_id: Id) -> Blockers:
        """Why it is not running now: every rule that holds it back (`items`), empty when none does."""
        return self._driver.run(list_blockers(execution_id))

    def logs(self, execution_id: Id, *, limit: int | None = None) -> Iterator[LogEntry]:
        """The entries its handlers logged, oldest first, following cursors (`limit`: page size)."""
        return self._driver.iterate(list_logs(execution_id, limit))

    def events(self, execution_id: Id, *, limit: int | None = None) -> Iterator[Event]:
        """Its transition events, oldest first, following cursors (`limit`: page size)."""
        return self._driver.iterate(list_events(execution_id, limit))

    def signal(self, execution_id: Id, name: str, payload: Any = None) -> SignalSent:
        """Send the signal `name` (with `payload`, any JSON value of at most 64 KiB) to the
        execution: a durable mailbox. A suspended execution waiting for that name resumes at once
        (`woke` True); otherwise the signal is kept, and the first wait that names it consumes it
        (never lost, never consumed twice). 409 once the execution is SUCCEEDED, DEAD_LETTER or
        CANCELLED. Not sent again after a lost reply (`Unavailable.maybe_applied`): see its
        message."""
        return self._driver.run(send_signal(execution_id, name, payload))

    def signals(self, execution_id: Id, *, limit: int | None = None) -> Iterator[Signal]:
        """The signals sent to it, oldest first, each with `consumed_at` once a wait took it,
        following cursors (`limit`: page size)."""
        return self._driver.iterate(list_signals(execution_id, limit))

    @overload
    def bulk_retry(self, *, dry_run: Literal[False] = ..., **selection: Unpack[Selection]) -> BulkResult: ...
    @overload
    def bulk_retry(self, *, dry_run: Literal[True], **selection: Unpack[Selection]) -> BulkDryRun: ...
    @overload
    def bulk_retry(self, *, dry_run: bool, **selection: Unpack[Selection]) -> BulkResult | BulkDryRun: ...

    def bulk_retry(self, *, dry_run: bool = False, **selection: Unpack[Selection]) -> BulkResult | BulkDryRun:
        """DEAD_LETTER and CANCELLED executions → ENQUEUED, each as a new attempt, for the selection
        (`state`, `queue`, `handler`, `job_id`, `ids`; at most `limit`). Repeat while `more`, with
        `cursor=result.next_cursor`. `dry_run=True`: change nothing and answer a `BulkDryRun`, how
        many executions the call would take now (`matched`, at most `limit`; `more`)."""
        if dry_run:
            return self._driver.run(bulk_dry_run("retry", selection))
        return self._driver.run(bulk("retry", selection))

    @overload
    def bulk_cancel(self, *, dry_run: Literal[False] = ..., **selection: Unpack[Selection]) -> BulkResult: ...
    @overload
    def bulk_cancel(self, *, dry_run: Literal[True], **selection: Unpack[Selection]) -> BulkDryRun: ...
    @overload
    def bulk_cancel(self, *, dry_run: bool, **selection: Unpack[Selection]) -> BulkResult | BulkDryRun: ...

    def bulk_cancel(self, *, dry_run: bool = False, **selection: Unpack[Selection]) -> BulkResult | BulkDryRun:
        """ENQUEUED, PROCESSING and WAITING executions → CANCELLED, for the selection. Repeat while `more`, with
        `cursor=result.next_cursor`. `dry_run=True`: change nothing, answer a `BulkDryRun`."""
        if dry_run:
            return self._driver.run(bulk_dry_run("cancel", selection))
        return self._driver.run(bulk("cancel", selection))

    @overload
    def bulk_delete(self, *, dry_run: Literal[False] = ..., **selection: Unpack[Selection]) -> BulkResult: ...
    @overload
    def bulk_delete(self, *, dry_run: Literal[True], **selection: Unpack[Selection]) -> BulkDryRun: ...
    @overload
    def bulk_delete(self, *, dry_run: bool, **selection: Unpack[Selection]) -> BulkResult | BulkDryRun: ...

    def bulk_delete(self, *, dry_run: bool = False, **selection: Unpack[Selection]) -> BulkResult | BulkDryRun:
        """Delete the selected executions that are finished. Repeat while `more`, with
        `cursor=result.next_cursor`. `dry_run=True`: change nothing, answer a `BulkDryRun`."""
        if dry_run:
            return self._driver.run(bulk_dry_run("delete", selection))
        return self._driver.run(bulk("delete", selection))


class AsyncExecutions:
    """`client.executions` of the asyncio client."""

    def __init__(self, driver: AsyncDriver) -> None:
        self._driver = driver

    async def get(self, execution_id: Id) -> Execution:
        return await self._driver.run(get_execution(execution_id))

    def list(self, **filters: Unpack[ExecutionFilters]) -> AsyncIterator[Execution]:
        return self._driver.iterate(list_executions(filters))

    async def page(self, cursor: str | None = None, **filters: Unpack[ExecutionFilters]) -> Page[Execution]:
        return await self._driver.run(list_executions(filters, cursor))

    async def wait(self, execution_id: Id, timeout: float = 60.0) -> Execution:
        return await self._driver.run(wait_for(execution_id, timeout))

    async def cancel(self, execution_id: Id) -> Execution:
        return await self._driver.run(cancel_execution(execution_id))

    async def retry(self, execution_id: Id) -> Execution:
        return await self._driver.run(retry_execution(execution_id))

    async def delete(self, execution_id: Id) -> None:
        return await self._driver.run(delete_execution(execution_id))

    async def attempts(self, execution_id: Id) -> builtins.list[Attempt]:
        return await self._driver.run(list_attempts(execution_id))

    async def blockers(self, execution_id: Id) -> Blockers:
        return await self._driver.run(list_blockers(execution_id))

    def logs(self, execution_id: Id, *, limit: int | None = None) -> AsyncIterator[LogEntry]:
        return self._driver.iterate(list_logs(execution_id, limit))

    def events(self, execution_id: Id, *, limit: int | None = None) -> AsyncIterator[Event]:
        return self._driver.iterate(list_events(execution_id, limit))

    async def signal(self, execution_id: Id, name: str, payload: Any = None) -> SignalSent:
        return await self._driver.run(send_signal(execution_id, name, payload))

    def signals(self, execution_id: Id, *, limit: int | None = None) -> AsyncIterator[Signal]:
        return self._driver.iterate(list_signals(execution_id, limit))

    @overload
    async def bulk_retry(self, *, dry_run: Literal[False] = ..., **selection: Unpack[Selection]) -> BulkResult: ...
    @overload
    async def bulk_retry(self, *, dry_run: Literal[True], **selection: Unpack[Selection]) -> BulkDryRun: ...
    @overload
    async def bulk_retry(self, *, dry_run: bool, **selection: Unpack[Selection]) -> BulkResult | BulkDryRun: ...

    async def bulk_retry(self, *, dry_run: bool = False,
                          **selection: Unpack[Selection]) -> BulkResult | BulkDryRun:
        if dry_run:
            return await self._driver.run(bulk_dry_run("retry", selection))
        return await self._driver.run(bulk("retry", selection))

    @overload
    async def bulk_cancel(self, *, dry_run: Literal[False] = ..., **selection: Unpack[Selection]) -> BulkResult: ...
    @overload
    async def bulk_cancel(self, *, dry_run: Literal[True], **selection: Unpack[Selection]) -> BulkDryRun: ...
    @overload
    async def bulk_cancel(self, *, dry_run: bool, **selection: Unpack[Selection]) -> BulkResult | BulkDryRun: ...

    async def bulk_cancel(self, *, dry_run: bool = False,
                          **selection: Unpack[Selection]) -> BulkResult | BulkDryRun:
        if dry_run:
            return await self._driver.run(bulk_dry_run("cancel", selection))
        return await self._driver.run(bulk("cancel", selection))

    @overload
    async def bulk_delete(self, *, dry_run: Literal[False] = ..., **selection: Unpack[Selection]) -> BulkResult: ...
    @overload
    async def bulk_delete(self, *, dry_run: Literal[True], **selection: Unpack[Selection]) -> BulkDryRun: ...
    @overload
    async def bulk_delete(self, *, dry_run: bool, **selection: Unpack[Selection]) -> BulkResult | BulkDryRun: ...

    async def bulk_delete(self, *, dry_run: bool = False,
                          **selection: Unpack[Selection]) -> BulkResult | BulkDryRun:
        if dry_run:
            return await self._driver.run(bulk_dry_run("delete", selection))
        return await self._driver.run(bulk("delete", selection))


share_docs(AsyncExecutions, Executions)
