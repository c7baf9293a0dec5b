"""`client.queues` (depths, pause, resume) and `client.nodes` (the live nodes)."""

from __future__ import annotations

import builtins

from jobwire._protocol import Call, listed, path
from jobwire.models import Node, Queue
from jobwire.resources._driver import AsyncDriver, Driver, share_docs


def list_queues() -> Call[list[Queue]]:
    return Call("listQueues", "GET", path("queues"), listed(Queue.from_json))


def pause_queue(name: str) -> Call[Queue]:
    return Call("pauseQueue", "POST", path("queues", name, "pause"), Queue.from_json, name=name)


def resume_queue(name: str) -> Call[Queue]:
    return Call("resumeQueue", "POST", path("queues", name, "resume"), Queue.from_json, name=name)


def list_nodes() -> Call[list[Node]]:
    return Call("listNodes", "GET", path("nodes"), listed(Node.from_json))


class Queues:
    """`client.queues`."""

    def __init__(self, driver: Driver) -> None:
        self._driver = driver

    def list(self) -> builtins.list[Queue]:
        """Every queue with live or dead-lettered work, or paused: `counts` by state and the age of
        its oldest claimable execution."""
        return self._driver.run(list_queues())

    def pause(self, name: str) -> Queue:
        """Stop claiming from the queue (enqueue still works) → the queue."""
        return self._driver.run(pause_queue(name))

    def resume(self, name: str) -> Queue:
        """Claim from the queue again → the queue."""
        return self._driver.run(resume_queue(name))


class AsyncQueues:
    """`client.queues` of the asyncio client."""

    def __init__(self, driver: AsyncDriver) -> None:
        self._driver = driver

    async def list(self) -> builtins.list[Queue]:
        return await self._driver.run(list_queues())

    async def pause(self, name: str) -> Queue:
        return await self._driver.run(pause_queue(name))

    async def resume(self, name: str) -> Queue:
        return await self._driver.run(resume_queue(name))


class Nodes:
    """`client.nodes`."""

    def __init__(self, driver: Driver) -> None:
        self._driver = driver

    def list(self) -> builtins.list[Node]:
        """The live nodes: each one's id, start, last heartbeat and calls in flight."""
        return self._driver.run(list_nodes())


class AsyncNodes:
    """`client.nodes` of the asyncio client."""

    def __init__(self, driver: AsyncDriver) -> None:
        self._driver = driver

    async def list(self) -> builtins.list[Node]:
        return await self._driver.run(list_nodes())


share_docs(AsyncQueues, Queues)
share_docs(AsyncNodes, Nodes)
