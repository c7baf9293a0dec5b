"""Flow control in the claim (jobwire_claim, jobwire_claim_pick): concurrency keys, keys taking
turns, rate limits and paused keys, through ExecutionRepository.claim on separate connections.

A handler with key_concurrency N never has more than N executions of one key PROCESSING, under
any number of concurrent claimers; keys take turns within a priority; a rate limit lets no more
than `limit` calls start in any window of `period_seconds`; a paused key's jobs wait.
"""

from __future__ import annotations

import asyncio
import random
from collections import Counter
from collections.abc import Sequence
import pytest

from app.db.database import Database
from app.db.handlers import HandlerRepository
from app.domain.dispatch import ClaimedJob
from app.domain.errors import ValidationFailed
from app.domain.handlers import RateLimit
from app.domain.signing import new_handler_secret
from tests.conftest import sql
from tests.db.test_stateful_claim import claim, enqueue, job, succeed


async def add_handler(db: Database, name: str = "h", *, max_concurrency: int | None = None,
                      key_concurrency: int | None = None, rate_limit: RateLimit | None = None,
                      key_rate_limit: RateLimit | None = None) -> None:
    async with db.transaction() as conn:
        await HandlerRepository().upsert(conn, name=name, url=f"http://127.0.0.1:9/{name}", timeout_seconds=None,
                                         max_concurrency=max_concurrency, stateful=False,
                                         new_secret=new_handler_secret(), key_concurrency=key_concurrency,
                                         rate_limit=rate_limit, key_rate_limit=key_rate_limit)


def keys_of(claimed: Sequence[ClaimedJob]) -> Counter[str | None]:
    return Counter(c.concurrency_key for c in claimed)


async def processing_per_key(db: Database) -> dict[str | None, int]:
    rows = await sql(db, "SELECT concurrency_key, count(*) FROM job_executions WHERE state = 'PROCESSING' "
                         "GROUP BY concurrency_key")
    return {k: n for k, n in rows}  # type: ignore[misc]


async def pause_key(db: Database, handler: str, key: str, paused: bool = True) -> None:
    await sql(db, "INSERT INTO job_keys (handler, key, paused) VALUES (:h, :k, :p) "
                  "ON CONFLICT (handler, key) DO UPDATE SET paused = EXCLUDED.paused", h=handler, k=key, p=paused)


# --- concurrency keys ------------------------------------------------------------------------

async def test_key_concurrency_caps_each_key_and_leaves_keyless_jobs_to_the_handler_limits(db: Database) -> None:
    await add_handler(db, key_concurrency=2)
    await enqueue(db, [job(f"a{i}", concurrency_key="a") for i in range(5)]
                  + [job(f"b{i}", concurrency_key="b") for i in range(5)]
                  + [job(f"n{i}") for i in range(3)])

    first = await claim(db, n=100)
    assert keys_of(first) == {"a": 2, "b": 2, None: 3}
    assert await claim(db, n=100) == []

    await succeed(db, [c for c in first if c.concurrency_key == "a"][:1])
    assert keys_of(await claim(db, n=100)) == {"a": 1}


async def test_max_concurrency_still_bounds_all_keys_together(db: Database) -> None:
    await add_handler(db, max_concurrency=3, key_concurrency=2)
    await enqueue(db, [job(f"{k}{i}", concurrency_key=k) for k in "abc" for i in range(3)])
    assert sum(keys_of(await claim(db, n=100)).values()) == 3
    assert await claim(db, n=100) == []


async def test_a_key_at_its_limit_does_not_hide_the_keys_behind_its_backlog(db: Database) -> None:
    await add_handler(db, key_concurrency=1)
    await enqueue(db, [job(f"a{i}", concurrency_key="a") for i in range(300)])
    await enqueue(db, [job("b0", concurrency_key="b")])
    [a] = await claim(db, n=1)
    assert a.concurrency_key == "a"
    assert [c.job_id for c in await claim(db, n=10)] == ["b0"]


async def test_concurrent_claimers_never_run_more_than_key_concurrency_per_key(db: Database) -> None:
    """Eight claimers at once on their own connections, each finishing some of what it claimed
    at random; after every claim, no key has more than 2 PROCESSING (checked in the database)."""
    await add_handler(db, key_concurrency=2)
    await enqueue(db, [job(f"{k}-{i}", concurrency_key=f"k{k}") for k in range(10) for i in range(30)])
    violations: list[dict[str | None, int]] = []
    seen: Counter[str] = Counter()

    async def claimer(node: str) -> None:
        rng = random.Random(node)
        mine: list[ClaimedJob] = []
        for _ in range(60):
            got = await claim(db, n=rng.randint(1, 8), node=node)
            seen.update(c.job_id for c in got)
            mine += got
            counts = await processing_per_key(db)
            if any(n > 2 for n in counts.values()):
                violations.append(counts)
            rng.shuffle(mine)
            finished = rng.randint(0, len(mine))
            done, mine = mine[:finished], mine[finished:]
            if done:
                await succeed(db, done)
            await asyncio.sleep(0)

    await asyncio.gather(*(claimer(f"node-{i}") for i in range(8)))
    assert violations == []
    assert max(seen.values()) == 1  # no attempt claimed twice
    assert len(seen) > 100


async def test_a_stateful_job_takes_no_concurrency_key(db: Database) -> None:
    await add_handler(db)
    with pytest.raises(ValidationFailed) as caught:
        await enqueue(db, [job("s", stateful=True, concurrency_key="a")])
    assert [e.field for e in caught.value.errors] == ["concurrency_key"]
    await sql(db, "UPDATE job_handlers SET stateful = true WHERE name = 'h'")
    with pytest.raises(ValidationFailed) as caught:
        await enqueue(db, [job("p"), job("s", concurrency_key="a")])
    assert [e.field for e in caught.value.errors] == ["jobs[1].concurrency_key"]
    assert "stateful" in caught.value.errors[0].message


# --- keys take turns -------------------------------------------------------------------------

async def test_a_key_enqueued_after_another_keys_ten_thousand_is_among_the_next_claims(db: Database) -> None:
    await add_handler(db)
    await enqueue(db, [job(f"big-{i}", concurrency_key="big") for i in range(10_000)])
    assert keys_of(await claim(db, n=50)) == {"big": 50}

    await enqueue(db, [job("small-0", concurrency_key="small"), job("small-1", concurrency_key="small"),
                       job("keyless-0"), job("keyless-1")])
    # Priority first, then keys in turn: each key's next job, the backlog's among them.
    assert keys_of(await claim(db, n=3)) == {"big": 1, "small": 1, None: 1}
    assert keys_of(await claim(db, n=3)) == {"big": 1, "small": 1, None: 1}
    assert keys_of(await claim(db, n=3)) == {"big": 3}


async def test_priority_comes_before_turns_and_scheduled_at_orders_within_a_key(db: Database) -> None:
    await add_handler(db)
    await enqueue(db, [job(f"a{i}", concurrency_key="a") for i in range(3)]
                  + [job(f"b{i}", concurrency_key="b") for i in range(3)]
                  + [job("urgent", concurrency_key="b", priority=10)])
    order = [c.job_id for c in await claim(db, n=1)] + [c.job_id for c in await claim(db, n=1)]
    order += [c.job_id for c in await claim(db, n=1)] + [c.job_id for c in await claim(db, n=1)]
    assert order[0] == "urgent"
    assert sorted(order[1:3]) == ["a0", "b0"] and order[3] in ("a1", "b1")


async def test_keys_in_turn_by_claim_order(db: Database) -> None:
    await add_handler(db)
    await enqueue(db, [job(f"{k}{i}", concurrency_key=k) for k in "abc" for i in range(4)])
    taken = [c.job_id for _ in range(12) for c in await claim(db, n=1)]
    rounds = [sorted(taken[i:i + 3]) for i in range(0, 12, 3)]
    assert rounds == [[f"a{i}", f"b{i}", f"c{i}"] for i in range(4)]


# --- rate limits -----------------------------------------------------------------------------

async def test_a_rate_limit_spaces_call_starts_and_holds_the_rest_enqueued(db: Database) -> None:
    await add_handler(db, rate_limit=RateLimit(limit=5, period_seconds=1.0))
    await enqueue(db, [job(f"j{i}") for i in range(20)])
    assert len(await claim(db, n=10)) == 1  # 5 a second: one every 200 ms, no burst
    assert await claim(db, n=10) == []
    [(next_slot, count)] = await sql(db, "SELECT rate_next - now(), rate_count FROM job_handler_flow")
    assert 0 < next_slot.total_seconds() <= 0.2 and count == 1
    assert (await sql(db, "SELECT count(*) FROM job_executions WHERE state = 'ENQUEUED' AND attempt = 0")) == [(19,)]


async def test_no_window_of_the_period_holds_more_than_the_limit(db: Database) -> None:
    """Claims in a loop for 1.5 s against 20 a second (bursts of 1): the claim times (the
    database's) never put more than 20 starts in a second, and the rate is not far below it."""
    await add_handler(db, rate_limit=RateLimit(limit=20, period_seconds=1.0))
    await enqueue(db, [job(f"j{i}") for i in range(200)])
    starts = []
    loop = asyncio.get_running_loop()
    end = loop.time() + 1.5
    while loop.time() < end:
        starts += [c.started_at for c in await claim(db, n=10)]
        await asyncio.sleep(0.005)
    starts.sort()
    assert all((starts[i + 20] - starts[i]).total_seconds() >= 1.0 for i in range(len(starts) - 20))
    assert len(starts) >= 24  # 1.5 s at 20 a second, less the polling's slack


async def test_a_large_limit_allows_a_burst_of_a_twentieth(db: Database) -> None:
    await add_handler(db, rate_limit=RateLimit(limit=100, period_seconds=1.0))
    await enqueue(db, [job(f"j{i}") for i in range(50)])
    assert len(await claim(db, n=50)) == 5


async def test_a_key_rate_limit_counts_per_key(db: Database) -> None:
    await add_handler(db, key_rate_limit=RateLimit(limit=2, period_seconds=60.0))
    await enqueue(db, [job(f"{k}{i}", concurrency_key=k) for k in "ab" for i in range(5)] + [job("n0"), job("n1")])
    assert keys_of(await claim(db, n=100)) == {"a": 1, "b": 1, None: 2}
    assert await claim(db, n=100) == []
    # 2 a minute: one every 30 s.
    rows = await sql(db, "SELECT key, rate_count, rate_next - now() BETWEEN interval '29 s' AND interval '30 s' "
                         "FROM job_keys ORDER BY key")
    assert [tuple(r) for r in rows] == [("a", 1, True), ("b", 1, True)]


# --- paused keys -----------------------------------------------------------------------------

async def test_a_paused_key_waits_while_the_others_run(db: Database) -> None:
    await add_handler(db)
    await pause_key(db, "h", "a")
    await enqueue(db, [job(f"{k}{i}", concurrency_key=k) for k in "ab" for i in range(3)])
    assert keys_of(await claim(db, n=100)) == {"b": 3}
    await pause_key(db, "h", "a", paused=False)
    assert keys_of(await claim(db, n=100)) == {"a": 3}


# --- idempotency ----------------------------------------------------------------------------

async def test_a_key_stored_before_concurrency_keys_still_matches_its_repeat(db: Database) -> None:
    """The fingerprint of a request without a concurrency_key is the one revision 0013 stored."""
    await add_handler(db)
    [first] = await enqueue(db, [job("j", idempotency_key="idem-1", payload={"x": 1})])
    old_formula = """
        encode(sha256(convert_to(CAST(jsonb_build_object(
            'handler', 'h', 'job_id', 'j', 'queue', 'q', 'priority', 0, 'payload', '{"x": 1}'::jsonb,
            'parameters', NULL, 'metadata', NULL, 'run_at', NULL, 'delay_seconds', NULL, 'max_attempts', 5,
            'stateful', false, 'timeout_seconds', NULL, 'max_duration_seconds', NULL) AS text), 'UTF8')), 'hex')"""
    assert await sql(db, f"SELECT request_hash = {old_formula} FROM job_executions") == [(True,)]
    assert await enqueue(db, [job("j", idempotency_key="idem-1", payload={"x": 1})]) == [first]
    with pytest.raises(ValidationFailed):
        await enqueue(db, [job("j", idempotency_key="idem-1", payload={"x": 1}, concurrency_key="a")])


async def test_beside_another_handlers_older_jobs_a_new_keys_turn_is_not_cut_for_being_recent(db: Database) -> None:
    """A claim of 10 takes the keyed handler's picks in turn against the plain handler's jobs by
    age: the new key's job, picked second, stands as the second oldest of the picks."""
    await add_handler(db, "keyed", key_concurrency=50)
    await add_handler(db, "plain")
    await enqueue(db, [job(f"a{i}", handler="keyed", concurrency_key="a") for i in range(100)])
    await enqueue(db, [job(f"p{i}", handler="plain") for i in range(100)])
    await enqueue(db, [job("b0", handler="keyed", concurrency_key="b")])
    taken = {c.job_id for c in await claim(db, n=10)}
    assert "b0" in taken and len(taken) == 10
