"""A key limited to queues never takes a schedule out of another queue, even when the other queue's
schedule of that name is created at the same moment (the check is on the row the upsert locked)."""

from __future__ import annotations

import asyncio

from app.db.database import Database
from app.db.handlers import HandlerRepository
from app.domain.errors import Forbidden
from app.domain.schedules import ScheduleSpec
from app.services.schedules import ScheduleLimits, ScheduleService
from tests.conftest import sql

MINE, THEIRS = frozenset({"q-mine"}), "q-theirs"
ROUNDS = 40


def spec(queue: str) -> ScheduleSpec:
    return ScheduleSpec(cron="0 0 1 1 *", handler="h", queue=queue)


async def test_a_limited_put_racing_the_creation_of_the_name_in_another_queue_never_moves_it(db: Database) -> None:
    async with db.transaction() as conn:
        await HandlerRepository().upsert(conn, name="h", url="http://127.0.0.1:9/h", timeout_seconds=None,
                                         max_concurrency=None, stateful=False, new_secret="whsec_dGVzdA==")
    service = ScheduleService(db, ScheduleLimits(1_000_000))

    async def limited(job_id: str) -> str:
        try:
            _, created = await service.put(job_id, spec("q-mine"), MINE)
        except Forbidden as exc:
            assert THEIRS not in str(exc)  # the other queue is not named
            return "refused"
        return "created" if created else "replaced"

    async def unlimited(job_id: str) -> str:
        _, created = await service.put(job_id, spec(THEIRS))
        return "created" if created else "replaced"

    # Each order once, one after the other: what either outcome of the race must look like.
    assert (await limited("first-mine"), await unlimited("first-mine")) == ("created", "replaced")
    assert (await unlimited("first-theirs"), await limited("first-theirs")) == ("created", "refused")
    for i in range(ROUNDS):
        job_id = f"race-{i}"
        # At once, each of the two started first in turn (which reaches the row first is the
        # database's: on a slow machine one order may win every round).
        if i % 2:
            theirs, mine = await asyncio.gather(unlimited(job_id), limited(job_id))
        else:
            mine, theirs = await asyncio.gather(limited(job_id), unlimited(job_id))
        # Either the limited put came first (created in q-mine, then moved by the unlimited one),
        # or the name was in q-theirs when it looked (refused); never replaced.
        assert (mine, theirs) in {("created", "replaced"), ("refused", "created")}, (i, mine, theirs)
    queues = {r["queue"] for r in await sql(db, "SELECT queue FROM job_schedules")}
    assert queues == {THEIRS}
    assert len(await sql(db, "SELECT 1 FROM job_schedules")) == ROUNDS + 2
