"""Callbacks racing a purge, against a real server and database: a handler's logs, steps (GET and
PUT), progress, heartbeats and completions sent while DELETE /v1/executions/{id}, a bulk-delete or
the pruner removes the execution answer as if it were still there or as if it never was (200,
201, 404, 409), never 500, and no log or step outlives its execution.

The race a purge loses to an insert is made certain, not likely: the purge is held (a lock on its
execution's events, which it deletes after the execution) until every writing callback waits for
the purge's lock on the execution, having found the execution still there; then it commits."""

from __future__ import annotations

import asyncio
import uuid
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import httpx
import pytest

from app.db.database import Database
from app.services.retention import PruneConfig, PruneService
from tests.conftest import RunningServer, register, scalar, sql

NOWHERE = "http://127.0.0.1:9/jobs"
CLEAN = {200, 201, 404, 409}
Send = Callable[[], Awaitable[httpx.Response]]


@pytest.fixture
async def server(api_only_server: RunningServer, db: Database) -> RunningServer:
    async with client_of(api_only_server) as api:
        await register(api, "h", NOWHERE)
    return api_only_server


@asynccontextmanager
async def client_of(server: RunningServer) -> AsyncIterator[httpx.AsyncClient]:
    """A client whose connections are all opened and closed within the block (a keep-alive
    connection left idle past the server's keep-alive timeout may be closed under a request)."""
    async with httpx.AsyncClient(base_url=server.url, timeout=60, limits=httpx.Limits(max_connections=64)) as api:
        yield api


def pruner(db: Database) -> PruneService:
    return PruneService(db, PruneConfig(retention_succeeded=7 * 86400, retention_failed=30 * 86400, rest_ratio=0))


async def finished(api: httpx.AsyncClient, db: Database, n: int, *, days_ago: float) -> list[uuid.UUID]:
    """n SUCCEEDED executions, created and completed `days_ago` days ago (past 7: the pruner's), each
    with its success's event row (the insert and the claim write none: DESIGN §8): a handler may
    still send them logs and steps, and any way of purging may remove them."""
    response = await api.post("/v1/jobs/batch", json={"jobs": [{"handler": "h", "run_at": "2999-01-01T00:00:00Z"}] * n})
    assert response.status_code == 201, response.text
    ids = [uuid.UUID(item["id"]) for item in response.json()["items"]]
    await sql(db, """
        WITH u AS (
            UPDATE job_executions SET state = 'SUCCEEDED', started_at = now(),
                created_at = now() - make_interval(secs => CAST(:days AS float8) * 86400),
                completed_at = now() - make_interval(secs => CAST(:days AS float8) * 86400)
            WHERE id = ANY(CAST(:ids AS uuid[]))
            RETURNING id, started_at, completed_at
        )
        INSERT INTO job_events (execution_id, event, type, attempt, started_at, node, occurred_at)
        SELECT id, jsonb_build_object('execution_id', id, 'new_state', 'SUCCEEDED', 'attempt', 0),
               'execution.succeeded', 0, started_at, 'node-1', completed_at
        FROM u""", ids=ids, days=float(days_ago))
    return ids


def callbacks(server: RunningServer, api: httpx.AsyncClient, execution_id: uuid.UUID) -> tuple[list[Send], list[Send]]:
    """What a handler may send about an attempt: (the writes, which insert rows referencing the
    execution; the others). A step's second PUT finds the first, or the execution gone."""
    token = server.app.state.services.callbacks.token_for(execution_id, 0)
    base, headers = f"/v1/executions/{execution_id}", {"authorization": f"Bearer {token}"}
    log = {"entries": [{"level": "INFO", "message": "flushed after completing"}] * 3}

    def send(method: str, path: str, body: Any = None) -> Send:
        return lambda: api.request(method, base + path, json=body, headers=headers)

    writes = [send("POST", "/logs", log), send("PUT", "/steps/charge", {"result": 1}),
              send("PUT", "/steps/charge", {"result": 2}), send("PUT", "/steps/ship", {})]
    others = [send("POST", "/progress", {"succeeded": 1}), send("POST", "/heartbeat"),
              send("POST", "/complete", {"outcome": "succeeded"}),
              send("POST", "/complete", {"outcome": "failed", "error": {"message": "late"}}),
              send("GET", "/steps/charge")]  # 404 until a step is recorded: here, none ever is
    return writes, others


def every_callback(server: RunningServer, api: httpx.AsyncClient, ids: list[uuid.UUID]) -> list[Send]:
    return [send for e in ids for part in callbacks(server, api, e) for send in part]


def tally(statuses: Counter[tuple[str, int]], response: httpx.Response) -> int:
    statuses[(f"{response.request.method} {response.request.url.path.split('/', 4)[-1]}",
              response.status_code)] += 1
    return response.status_code


async def assert_nothing_outlives(db: Database, purged: list[uuid.UUID]) -> None:
    assert await scalar(db, "SELECT count(*) FROM job_executions WHERE id = ANY(CAST(:ids AS uuid[]))",
                        ids=purged) == 0
    for table in ("job_logs", "job_steps", "job_events"):
        orphans = await scalar(db, f"SELECT count(*) FROM {table} t WHERE NOT EXISTS "
                                   "(SELECT 1 FROM job_executions e WHERE e.id = t.execution_id)")
        assert orphans == 0, table


async def until_waiting(db: Database, n: int, *, on: int | None = None) -> None:
    """Returns once n sessions (or more) of this database wait for a lock (held by session `on`, if
    given)."""
    for _ in range(3000):
        waiting = await scalar(db, "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND "
                                   "cardinality(pg_blocking_pids(pid)) > 0 AND "
                                   "(CAST(:on AS int) IS NULL OR :on = ANY(pg_blocking_pids(pid)))", on=on)
        if waiting >= n:
            return
        await asyncio.sleep(0.02)
    raise AssertionError(f"{waiting} sessions wait for a lock, not {n}")


PURGES = ("delete", "bulk-delete", "pruner")


def purge_of(kind: str, api: httpx.AsyncClient, db: Database, ids: list[uuid.UUID]) -> list[Awaitable[Any]]:
    async def delete(execution_id: uuid.UUID) -> None:
        response = await api.delete(f"/v1/executions/{execution_id}")
        assert response.status_code == 204, response.text

    async def bulk_delete() -> None:
        response = await api.post("/v1/executions/bulk-delete", json={"ids": [str(e) for e in ids]})
        assert response.status_code == 200 and response.json()["changed"] == len(ids), response.text

    if kind == "delete":
        return [delete(e) for e in ids]
    if kind == "bulk-delete":
        return [bulk_delete()]
    return [pruner(db).run()]


@pytest.mark.parametrize("kind", PURGES)
async def test_writes_that_found_the_execution_before_a_purge_committed_answer_404(server, db, kind) -> None:
    """Each write reads the execution (still there), then waits on the purge's lock to insert its
    row; the purge commits: every write answers 404, every other callback 200, and nothing of
    the executions is left. Once purged, every callback answers 404."""
    statuses: Counter[tuple[str, int]] = Counter()
    async with client_of(server) as api:
        ids = await finished(api, db, 2, days_ago=30)
        async with db.pool.acquire() as gate:
            held = gate.transaction()
            await held.start()
            locked = await gate.fetch("SELECT id FROM job_events WHERE execution_id = ANY($1) FOR UPDATE", ids)
            assert len(locked) == len(ids)  # each has its success's event
            purges = [asyncio.ensure_future(p) for p in purge_of(kind, api, db, ids)]
            await until_waiting(db, len(purges), on=gate.get_server_pid())  # the purges wait for the gate
            sent = [callbacks(server, api, e) for e in ids]
            writes = [asyncio.ensure_future(w()) for ws, _ in sent for w in ws]
            await until_waiting(db, len(purges) + len(writes))  # and every write for a purge
            others = await asyncio.gather(*(o() for _, os in sent for o in os))
            await held.commit()
        await asyncio.gather(*purges)
        assert [tally(statuses, r) for r in await asyncio.gather(*writes)] == [404] * len(writes), statuses
        assert [tally(statuses, r) for r in others] == [200, 200, 200, 200, 404] * len(ids), statuses
        after = await asyncio.gather(*(send() for send in every_callback(server, api, ids)))
        assert [tally(statuses, r) for r in after] == [404] * len(after), statuses
    await assert_nothing_outlives(db, ids)


async def after(start: asyncio.Event, work: Awaitable[Any]) -> Any:
    await start.wait()
    return await work


async def tally_after(start: asyncio.Event, send: Send, statuses: Counter[tuple[str, int]]) -> None:
    await start.wait()
    tally(statuses, await send())


async def test_callbacks_racing_a_delete_a_bulk_delete_and_the_pruner_never_answer_500(server, db) -> None:
    """Rounds of executions removed by DELETE, by one bulk-delete and by a prune batch while every
    callback of theirs is sent, all released together: whichever way each race goes, every
    answer is one of 200/201/404/409, and no log or step is left without its execution."""
    statuses: Counter[tuple[str, int]] = Counter()
    purged: list[uuid.UUID] = []
    for _ in range(3):
        async with client_of(server) as api:
            groups = {kind: await finished(api, db, 3, days_ago=30 if kind == "pruner" else 0) for kind in PURGES}
            everyone = [e for ids in groups.values() for e in ids]
            purged += everyone
            start = asyncio.Event()
            sends = [tally_after(start, send, statuses) for send in every_callback(server, api, everyone)]
            purges = [after(start, p) for kind, ids in groups.items() for p in purge_of(kind, api, db, ids)]
            tasks = [asyncio.ensure_future(t) for t in (*sends, *purges)]
            await asyncio.sleep(0)  # every task waits at the barrier
            start.set()
            await asyncio.gather(*tasks)
            # The pruner skips a row a callback holds (its foreign-key check) rather than wait: a
            # later run takes it.
            while await scalar(db, "SELECT count(*) FROM job_executions WHERE id = ANY(CAST(:ids AS uuid[]))",
                               ids=groups["pruner"]):
                await pruner(db).run()
    unclean = {key: n for key, n in statuses.items() if key[1] not in CLEAN}
    assert not unclean, unclean
    await assert_nothing_outlives(db, purged)

