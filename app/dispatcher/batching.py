"""The jobs of a batching handler (`batch: {max_size, max_wait_ms}`), gathered into calls.

A claim's jobs of such a handler join its open group, in claim order; a group is sent when it
holds max_size jobs, or when its wait is over: max_wait_ms after its first job came, sooner when
a job's deadline is near (a job never waits more than half of the time its claim left it), at
once when the node stops or has no slot left for another job. With max_wait_ms 0 a group holds
the jobs of one claim (up to max_size) and is sent as soon as the claim's jobs are handed out.
Each job keeps its own slot (the node's in-flight count is of jobs) and its own outcome.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field, replace

from app.domain.batching import Batch
from app.domain.dispatch import ClaimedJob


@dataclass(slots=True)
class Group:
    handler: str
    batch: Batch
    send_at: float  # loop time: the group's wait is over
    jobs: list[ClaimedJob] = field(default_factory=list)
    deadlines: list[float] = field(default_factory=list)  # loop time: each job's deadline, as claimed
    open: bool = True  # taking jobs
    changed: asyncio.Event = field(default_factory=asyncio.Event)

    def add(self, job: ClaimedJob, now: float) -> None:
        self.jobs.append(job)
        self.deadlines.append(now + job.seconds_left)
        # A job whose time is short brings the send forward: half its time left at most.
        self.send_at = min(self.send_at, now + job.seconds_left / 2)
        if len(self.jobs) >= self.batch.max_size:
            self.close()
        else:
            self.changed.set()

    def close(self) -> None:
        """Take no more jobs; send now."""
        self.open = False
        self.changed.set()

    async def gathered(self) -> list[ClaimedJob]:
        """Its jobs once the group is full or its wait is over (it takes no more after), each with
        the seconds left to its deadline as of now (the call's deadline is the soonest of them)."""
        loop = asyncio.get_running_loop()
        while self.open:
            left = self.send_at - loop.time()
            if left <= 0:
                break
            self.changed.clear()
            try:
                await asyncio.wait_for(self.changed.wait(), timeout=left)
            except TimeoutError:
                break
        self.open = False
        now = loop.time()
        return [replace(job, seconds_left=deadline - now) for job, deadline in zip(self.jobs, self.deadlines,
                                                                                     strict=True)]


class Gathering:
    """Each batching handler's open group (at most one per handler)."""

    def __init__(self) -> None:
        self._open: dict[str, Group] = {}

    def place(self, job: ClaimedJob, now: float) -> Group | None:
        """Put a batching job into its handler's open group; returns the group when it is a new
        one (whose call the caller starts), None when the job joined one already waiting."""
        assert job.batch is not None
        group = self._open.get(job.handler)
        created = group is None or not group.open
        if group is None or not group.open:
            group = Group(job.handler, job.batch, send_at=now + job.batch.max_wait_ms / 1000)
            self._open[job.handler] = group
        group.add(job, now)
        if not group.open:
            del self._open[job.handler]
        return group if created else None

    def close_all(self) -> None:
        """Send every open group now (the node stops)."""
        for group in self._open.values():
            group.close()
        self._open.clear()
