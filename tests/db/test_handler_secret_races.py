"""Secret rotation under concurrency: two sessions deleting a handler's two last secrets at once
never leave it none (each holds the handler's row, so the second sees the first's delete), and
rotation does not hold up enqueues of the handler."""

from __future__ import annotations

import asyncio
from uuid import UUID

import pytest

from app.db.database import Database
from app.db.handlers import HandlerRepository
from app.domain.errors import Conflict
from app.domain.signing import new_handler_secret
from app.services.handlers import HandlerService, HandlerSpec
from tests.conftest import scalar

repo = HandlerRepository()


async def handler_with_two_secrets(db: Database) -> tuple[HandlerService, UUID, UUID]:
    service = HandlerService(db)
    await service.put("h", HandlerSpec(url="http://127.0.0.1:9/h"))
    await service.add_secret("h")
    first, second = (s.id for s in (await service.get("h")).secrets)
    return service, first, second


async def test_two_sessions_deleting_the_two_last_secrets_leave_one(db: Database) -> None:
    """Interleaved by hand: A deletes its secret and holds its transaction open; B, deleting the
    other, waits for A's lock, then sees A's delete and is refused."""
    _, a_id, b_id = await handler_with_two_secrets(db)
    a_locked = asyncio.Event()
    a_may_commit = asyncio.Event()

    async def session_a() -> tuple[bool, bool]:
        async with db.transaction() as conn:
            assert await repo.secrets.lock(conn, "h")
            result = await repo.secrets.delete(conn, "h", a_id)
            a_locked.set()
            await a_may_commit.wait()
        return result

    async def session_b() -> tuple[bool, bool]:
        await a_locked.wait()
        async with db.transaction() as conn:
            assert await repo.secrets.lock(conn, "h")  # waits for A's commit
            return await repo.secrets.delete(conn, "h", b_id)

    a_task, b_task = asyncio.create_task(session_a()), asyncio.create_task(session_b())
    await a_locked.wait()
    await asyncio.sleep(0.3)
    assert not b_task.done(), "B went ahead while A held the handler"
    assert await scalar(db, "SELECT count(*) FROM job_handler_secrets WHERE handler = 'h'") == 2  # A uncommitted
    a_may_commit.set()
    assert await a_task == (True, True)
    assert await b_task == (True, False)  # found, refused: it is the last one
    assert await scalar(db, "SELECT count(*) FROM job_handler_secrets WHERE handler = 'h'") == 1


@pytest.mark.parametrize("round_", range(10))
async def test_concurrent_deletes_through_the_service_always_keep_one_secret(db: Database, round_: int) -> None:
    service, first, second = await handler_with_two_secrets(db)
    results = await asyncio.gather(service.delete_secret("h", first), service.delete_secret("h", second),
                                   return_exceptions=True)
    assert sorted(type(r).__name__ for r in results) == ["Conflict", "NoneType"], results
    assert all(r is None or isinstance(r, Conflict) for r in results)
    assert len((await service.get("h")).secrets) == 1
    assert await scalar(db, "SELECT count(*) FROM job_handler_secrets WHERE handler = 'h'") == 1


async def test_an_enqueue_is_not_held_up_by_a_rotation_in_progress(db: Database) -> None:
    """Rotation locks the handler FOR NO KEY UPDATE; an enqueue's FOR KEY SHARE does not wait for it."""
    await handler_with_two_secrets(db)
    async with db.transaction() as rotating:
        assert await repo.secrets.lock(rotating, "h")
        await repo.secrets.add(rotating, "h", new_handler_secret(), None)

        async def enqueue_lock() -> dict[str, bool]:
            async with db.transaction() as conn:
                return await repo.lock_for_enqueue(conn, ["h"])

        assert await asyncio.wait_for(enqueue_lock(), timeout=5) == {"h": False}
