"""A program written against the client that openapi-python-client generates from
openapi/openapi.json: register a handler, enqueue a job to it, read the execution back until the
handler has answered, and find it in the list. tests/clients/test_openapi_generated_client.py
type-checks it with mypy --strict and runs it against a live node.

Run by hand: `python openapi_client_usage.py <jobwire url> <handler url> [api key]`, with the
generated `jobwire_client` package importable."""

from __future__ import annotations

import asyncio
import sys

from jobwire_client import AuthenticatedClient
from jobwire_client.api.executions import get_execution, list_executions
from jobwire_client.api.handlers import put_handler
from jobwire_client.api.jobs import enqueue_job
from jobwire_client.models import ExecutionOut, ExecutionOutState, ExecutionPage, HandlerIn, HandlerOut, JobIn, Problem

HANDLER = "generated-client"


class Refused(Exception):
    """Jobwire answered with a problem document."""


async def run(base_url: str, handler_url: str, api_key: str = "no-key-needed") -> ExecutionOut:
    """The execution of one job enqueued and read back through the generated client, once its
    handler has answered; the API is open while no key exists, so any key does then."""
    async with AuthenticatedClient(base_url=base_url, token=api_key, raise_on_unexpected_status=True) as client:
        handler = await put_handler.asyncio(HANDLER, client=client, body=HandlerIn(url=handler_url))
        if not isinstance(handler, HandlerOut):
            raise Refused(handler)
        created = await enqueue_job.asyncio(
            client=client, body=JobIn(handler=HANDLER, payload={"image": "42.png"}, job_id="generated-1"))
        if not isinstance(created, ExecutionOut):
            raise Refused(created)
        execution = await settled(client, created)
        page = await list_executions.asyncio(client=client, handler=HANDLER)
        if not isinstance(page, ExecutionPage):
            raise Refused(page)
        if [e.id for e in page.items] != [created.id]:
            raise AssertionError(f"listed {[e.id for e in page.items]}, enqueued {created.id}")
        return execution


async def settled(client: AuthenticatedClient, created: ExecutionOut, seconds: float = 10.0) -> ExecutionOut:
    """The execution once it is no longer ENQUEUED or PROCESSING."""
    for _ in range(int(seconds / 0.02)):
        found = await get_execution.asyncio(created.id, client=client)
        if isinstance(found, Problem) or found is None:
            raise Refused(found)
        if found.state not in (ExecutionOutState.ENQUEUED, ExecutionOutState.PROCESSING):
            return found
        await asyncio.sleep(0.02)
    raise TimeoutError(f"execution {created.id} still unfinished after {seconds} s")


if __name__ == "__main__":
    done = asyncio.run(run(*sys.argv[1:4]))
    print(done.id, done.state.value, done.result)
