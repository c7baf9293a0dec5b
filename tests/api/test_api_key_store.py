"""What every management request asks of the database keys (app/services/api_keys.py): a key's
lookup and "is the API open?" are cached for 2 s (no database round trip per request, a revoked
key refused within the bound), and neither the last key nor the last admin key is deleted, by one
delete or by two at once, unless a bootstrap key is configured."""

from __future__ import annotations

import asyncio
from uuid import UUID

import pytest

from app.db.api_keys import ApiKeyRepository
from app.db.database import Connection, Database
from app.domain.access import ApiKey, Scope
from app.domain.errors import Conflict, Forbidden
from app.services.api_keys import ApiKeyService, key_hash, new_key
from tests.conftest import scalar, waits_for_a_lock


class CountingRepository(ApiKeyRepository):
    def __init__(self) -> None:
        self.lookups = 0
        self.existence_checks = 0

    async def by_hash(self, conn: Connection, digest: str) -> ApiKey | None:
        self.lookups += 1
        await asyncio.sleep(0.01)  # long enough for concurrent requests to meet
        return await super().by_hash(conn, digest)

    async def any_exist(self, conn: Connection) -> bool:
        self.existence_checks += 1
        return await super().any_exist(conn)


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def repository() -> CountingRepository:
    return CountingRepository()


@pytest.fixture
def service(db: Database, repository: CountingRepository, clock: Clock) -> ApiKeyService:
    return ApiKeyService(db, bootstrap=False, repository=repository, clock=clock)


async def test_a_key_is_looked_up_once_per_cache_period_however_many_requests_use_it(
        service: ApiKeyService, repository: CountingRepository, clock: Clock) -> None:
    created = await service.create("k", [Scope.ENQUEUE], None)
    found = await asyncio.gather(*(service.principal_for(created.secret) for _ in range(50)))
    assert repository.lookups == 1  # concurrent requests shared one lookup
    assert {p.key_id for p in found if p is not None} == {created.key.id}
    for _ in range(100):
        assert await service.principal_for(created.secret) is not None
    assert repository.lookups == 1
    clock.now += 1.9
    await service.principal_for(created.secret)
    assert repository.lookups == 1
    clock.now += 0.2
    await service.principal_for(created.secret)
    assert repository.lookups == 2


async def test_another_nodes_delete_is_seen_once_the_cached_answer_expires(
        db: Database, service: ApiKeyService, clock: Clock) -> None:
    other_node = ApiKeyService(db, bootstrap=False)
    keep = await other_node.create("keep", [Scope.ADMIN], None)
    doomed = await other_node.create("doomed", [Scope.READ], ["a"])
    principal = await service.principal_for(doomed.secret)
    assert principal is not None and principal.queues == frozenset({"a"})
    await other_node.delete(doomed.key.id)
    assert await other_node.principal_for(doomed.secret) is None  # the deleting node: at once
    assert await service.principal_for(doomed.secret) is not None  # another: until its entry expires
    clock.now += 2.0
    assert await service.principal_for(doomed.secret) is None
    assert await service.principal_for(keep.secret) is not None


async def test_unknown_keys_are_not_cached_so_a_new_key_works_at_once_everywhere(
        db: Database, service: ApiKeyService, repository: CountingRepository) -> None:
    secret = new_key()
    assert await service.principal_for(secret) is None
    assert await service.principal_for("not-a-jw-key") is None
    assert repository.lookups == 1  # a token that is no database key is not looked up
    other_node = ApiKeyService(db, bootstrap=False)
    created = await other_node.create("k", [Scope.READ], None)
    assert await service.principal_for(created.secret) is not None


async def test_whether_the_api_is_open_is_cached_too(
        db: Database, service: ApiKeyService, repository: CountingRepository, clock: Clock) -> None:
    assert all(await asyncio.gather(*(service.is_open() for _ in range(20))))
    assert repository.existence_checks == 1
    other_node = ApiKeyService(db, bootstrap=False)
    await other_node.create("first", [Scope.ADMIN], None)
    assert await other_node.is_open() is False  # the creating node: at once
    assert await service.is_open() is True
    clock.now += 2.0
    assert await service.is_open() is False
    booted = ApiKeyService(db, bootstrap=True, repository=repository)
    checks = repository.existence_checks
    assert await booted.is_open() is False and repository.existence_checks == checks  # no database needed


async def test_a_key_is_stored_as_its_sha256(db: Database, service: ApiKeyService) -> None:
    created = await service.create("k", [Scope.READ, Scope.READ, Scope.OPERATE], ["b", "a", "b"])
    assert created.key.scopes == (Scope.READ, Scope.OPERATE) and created.key.queues == ("a", "b")
    stored = await scalar(db, "SELECT key_hash FROM job_api_keys WHERE id = :id", id=created.key.id)
    assert stored == key_hash(created.secret) and created.secret not in stored


async def test_a_principal_names_the_scope_it_lacks(service: ApiKeyService) -> None:
    created = await service.create("k", [Scope.OPERATE], None)
    principal = await service.principal_for(created.secret)
    assert principal is not None
    principal.require(Scope.READ)
    with pytest.raises(Forbidden) as refused:
        principal.require(Scope.ENQUEUE)
    assert refused.value.scope == "enqueue"
    assert str(refused.value) == "this key has scopes [operate]; enqueue is needed (granted by enqueue or admin)"


async def test_two_concurrent_deletes_never_remove_the_last_key(db: Database) -> None:
    """Real concurrent sessions: a delete waits for another's lock, then sees its commit."""
    one, two = ApiKeyService(db, bootstrap=False), ApiKeyService(db, bootstrap=False)
    first = await one.create("first", [Scope.ADMIN], None)
    second = await one.create("second", [Scope.ADMIN], None)
    repository = ApiKeyRepository()
    async with db.pool.acquire() as held:
        # Another delete in flight: it holds the lock and has deleted `first`, not committed yet.
        transaction = held.transaction()
        await transaction.start()
        await repository.lock_for_delete(held)
        assert await repository.delete(held, first.key.id, keep_last=True)
        waiting = asyncio.create_task(two.delete(second.key.id))
        await asyncio.sleep(0.3)
        assert not waiting.done()  # it waits for the lock
        await transaction.commit()
        with pytest.raises(Conflict):
            await waiting
    assert await scalar(db, "SELECT count(*) FROM job_api_keys") == 1


@pytest.mark.parametrize("attempt", range(3))
async def test_deleting_the_last_two_keys_at_once_leaves_one(db: Database, attempt: int) -> None:
    nodes = [ApiKeyService(db, bootstrap=False) for _ in range(2)]
    keys = [await nodes[0].create(f"k{i}", [Scope.ADMIN], None) for i in range(2)]
    results = await asyncio.gather(*(node.delete(k.key.id) for node, k in zip(nodes, keys, strict=True)),
                                   return_exceptions=True)
    assert sorted(type(r).__name__ for r in results) == ["Conflict", "NoneType"]
    remaining = await scalar(db, "SELECT id FROM job_api_keys")
    assert isinstance(remaining, UUID) and remaining in {k.key.id for k in keys}


async def test_with_a_bootstrap_key_the_last_database_key_may_be_deleted(db: Database) -> None:
    service = ApiKeyService(db, bootstrap=True)
    created = await service.create("only", [Scope.READ], None)
    await service.delete(created.key.id)
    assert await scalar(db, "SELECT count(*) FROM job_api_keys") == 0


async def test_the_last_admin_key_is_kept_while_other_keys_remain(db: Database) -> None:
    service = ApiKeyService(db, bootstrap=False)
    admin = await service.create("admin", [Scope.ADMIN], None)
    reader = await service.create("reader", [Scope.READ, Scope.OPERATE], None)
    with pytest.raises(Conflict, match="last API key with scope admin"):
        await service.delete(admin.key.id)
    await service.delete(reader.key.id)  # not an admin key: it may go
    with pytest.raises(Conflict, match="would open the API"):
        await service.delete(admin.key.id)
    assert await scalar(db, "SELECT array_agg(id) FROM job_api_keys") == [admin.key.id]


async def test_an_admin_key_may_go_while_another_admin_key_remains(db: Database) -> None:
    service = ApiKeyService(db, bootstrap=False)
    first = await service.create("first", [Scope.ADMIN], None)
    second = await service.create("second", [Scope.READ, Scope.ADMIN], None)
    await service.create("reader", [Scope.READ], None)
    await service.delete(first.key.id)
    with pytest.raises(Conflict, match="scope admin"):
        await service.delete(second.key.id)


async def test_two_concurrent_deletes_never_remove_the_last_admin_key(db: Database) -> None:
    """Real concurrent sessions: a delete of the second-last admin key waits for another's lock,
    then sees its commit and keeps the last admin key (a read key remains: not the last key)."""
    one, two = ApiKeyService(db, bootstrap=False), ApiKeyService(db, bootstrap=False)
    first = await one.create("first", [Scope.ADMIN], None)
    second = await one.create("second", [Scope.ADMIN], None)
    await one.create("reader", [Scope.READ], None)
    repository = ApiKeyRepository()
    async with db.pool.acquire() as held:
        transaction = held.transaction()
        await transaction.start()
        await repository.lock_for_delete(held)
        assert await repository.delete(held, first.key.id, keep_last=True)
        waiting = asyncio.create_task(two.delete(second.key.id))
        await waits_for_a_lock(db, held)  # the second delete is in flight, waiting for the lock
        await transaction.commit()
        with pytest.raises(Conflict, match="scope admin"):
            await waiting
    assert await scalar(db, "SELECT array_agg(id) FROM job_api_keys WHERE 'admin' = ANY(scopes)") == [second.key.id]


@pytest.mark.parametrize("attempt", range(3))
async def test_deleting_the_last_two_admin_keys_at_once_leaves_one(db: Database, attempt: int) -> None:
    nodes = [ApiKeyService(db, bootstrap=False) for _ in range(2)]
    keys = [await nodes[0].create(f"k{i}", [Scope.ADMIN], None) for i in range(2)]
    await nodes[0].create("reader", [Scope.READ, Scope.ENQUEUE], None)
    results = await asyncio.gather(*(node.delete(k.key.id) for node, k in zip(nodes, keys, strict=True)),
                                   return_exceptions=True)
    assert sorted(type(r).__name__ for r in results) == ["Conflict", "NoneType"]
    remaining = await scalar(db, "SELECT array_agg(id) FROM job_api_keys WHERE 'admin' = ANY(scopes)")
    assert len(remaining) == 1 and remaining[0] in {k.key.id for k in keys}


async def test_with_a_bootstrap_key_the_last_admin_key_may_be_deleted(db: Database) -> None:
    service = ApiKeyService(db, bootstrap=True)
    admins = [await service.create(f"admin{i}", [Scope.ADMIN], None) for i in range(2)]
    await service.create("reader", [Scope.READ], None)
    await asyncio.gather(*(service.delete(k.key.id) for k in admins))
    assert await scalar(db, "SELECT count(*) FROM job_api_keys WHERE 'admin' = ANY(scopes)") == 0

