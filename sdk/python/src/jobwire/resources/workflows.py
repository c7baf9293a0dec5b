"""`client.workflows`: jobs with dependencies, made at once (all or none), given more jobs while
they run, read with their jobs, followed to their end, cancelled and retried as one.

A workflow's creation carries an idempotency key, the caller's (`idempotency_key=`) or one the
client makes (`sdk-<uuid4>`), so a try sent again after a lost reply answers the workflow the
first try stored instead of making a second one."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable, Iterator, Mapping
from typing import Any, Unpack

from jobwire._protocol import Call, Plan, paged, path, poll
from jobwire.models import AddedJobs, Page, Workflow, WorkflowJob
from jobwire.resources._driver import AsyncDriver, Driver, share_docs
from jobwire.resources.jobs import new_idempotency_key
from jobwire.types import Id, WorkflowFilters, WorkflowJobSpec

Jobs = Iterable[WorkflowJobSpec | Mapping[str, Any]]


def job_as_sent(job: Mapping[str, Any]) -> dict[str, Any]:
    """A workflow's job as sent: None fields left out (they mean the default), `depends_on` a list.
    No idempotency key is added: the workflow's covers it."""
    sent = {k: v for k, v in job.items() if v is not None}
    if "depends_on" in sent:
        parents = sent["depends_on"]
        sent["depends_on"] = [parents] if isinstance(parents, str) else list(parents)
    return sent


def create_workflow(jobs: Jobs, name: str | None, metadata: Mapping[str, Any] | None,
                    idempotency_key: str | None) -> Call[Workflow]:
    body: dict[str, Any] = {"jobs": [job_as_sent(job) for job in jobs],
                            "idempotency_key": idempotency_key or new_idempotency_key()}
    if name is not None:
        body["name"] = name
    if metadata is not None:
        body["metadata"] = metadata
    return Call("createWorkflow", "POST", path("workflows"), Workflow.from_json, body=body, name=name or "")


def add_workflow_jobs(workflow_id: Id, jobs: Jobs) -> Call[AddedJobs]:
    return Call("addWorkflowJobs", "POST", path("workflows", workflow_id, "jobs"), AddedJobs.from_json,
                body={"jobs": [job_as_sent(job) for job in jobs]}, name=str(workflow_id))


def get_workflow(workflow_id: Id) -> Call[Workflow]:
    return Call("getWorkflow", "GET", path("workflows", workflow_id), Workflow.from_json, name=str(workflow_id))


def list_workflows(filters: WorkflowFilters, cursor: str | None = None) -> Call[Page[Workflow]]:
    return Call("listWorkflows", "GET", path("workflows"), paged(Workflow.from_json),
                params={**filters, "cursor": cursor})


def list_workflow_jobs(workflow_id: Id, state: str | None, limit: int | None,
                       cursor: str | None = None) -> Call[Page[WorkflowJob]]:
    return Call("listWorkflowJobs", "GET", path("workflows", workflow_id, "jobs"), paged(WorkflowJob.from_json),
                params={"state": state, "limit": limit, "cursor": cursor}, name=str(workflow_id))


def cancel_workflow(workflow_id: Id) -> Call[Workflow]:
    return Call("cancelWorkflow", "POST", path("workflows", workflow_id, "cancel"), Workflow.from_json,
                name=str(workflow_id))


def retry_workflow(workflow_id: Id) -> Call[Workflow]:
    return Call("retryWorkflow", "POST", path("workflows", workflow_id, "retry"), Workflow.from_json,
                name=str(workflow_id))


def wait_for(workflow_id: Id, timeout: float) -> Plan[Workflow]:
    return poll(get_workflow(workflow_id), timeout, lambda workflow: workflow.is_finished,
                lambda workflow: f"workflow {workflow.id} is still {workflow.state}")


class Workflows:
    """`client.workflows`."""

    def __init__(self, driver: Driver) -> None:
        self._driver = driver

    def create(self, jobs: Jobs, *, name: str | None = None, metadata: Mapping[str, Any] | None = None,
               idempotency_key: str | None = None) -> Workflow:
        """Make a workflow of 1–1,000 jobs atomically (all or none) → the Workflow, its `items` the
        jobs in the request's order. Each job (`WorkflowJobSpec`) has a `ref`, the `handler`, and
        may name the refs it `depends_on`: it is WAITING until they are all terminal, then ENQUEUED
        when they all succeeded; a parent that ends DEAD_LETTER or CANCELLED cancels it (and its
        descendants), or with `on_dependency_failure="run"` it runs anyway. An unknown or
        duplicate ref, a self-dependency or a cycle → 422 naming the field. `name` finds it again
        (`list(name=…)`; not unique). A repeated `idempotency_key` with the same request answers
        the workflow stored first; with another, 422 (without one the client makes one, so a
        try sent again after a lost reply makes no second workflow)."""
        return self._driver.run(create_workflow(jobs, name, metadata, idempotency_key))

    def add_jobs(self, workflow_id: Id, jobs: Jobs) -> AddedJobs:
        """Add 1–1,000 jobs to a RUNNING workflow (409 once it is finished; at most 10,000 jobs in
        all) → the workflow and the jobs added. They may depend on any of its refs, finished ones
        too: a parent that succeeded counts as done, one that failed cancels a `cancel` child at
        once. Not sent again after a lost reply (`Unavailable.maybe_applied`): see its message."""
        return self._driver.run(add_workflow_jobs(workflow_id, jobs))

    def get(self, workflow_id: Id) -> Workflow:
        """The workflow with its jobs counted by state (404 when there is none)."""
        return self._driver.run(get_workflow(workflow_id))

    def list(self, **filters: Unpack[WorkflowFilters]) -> Iterator[Workflow]:
        """Workflows, newest first, following `next_cursor` to the end (filters `state`, `name`;
        `limit` is the page size, default 50, at most 1000). An API key limited to queues sees
        those whose jobs are all in its queues."""
        return self._driver.iterate(list_workflows(filters))

    def page(self, cursor: str | None = None, **filters: Unpack[WorkflowFilters]) -> Page[Workflow]:
        """One page of `list`: pass its `next_cursor` back as `cursor` for the next."""
        return self._driver.run(list_workflows(filters, cursor))

    def jobs(self, workflow_id: Id, *, state: str | None = None, limit: int | None = None) -> Iterator[WorkflowJob]:
        """The workflow's jobs by ref, each with its execution, state, queue and the refs it
        depends on, following cursors to the end (`state`: only jobs in it; `limit` is the page
        size, default 100, at most 1000)."""
        return self._driver.iterate(list_workflow_jobs(workflow_id, state, limit))

    def jobs_page(self, workflow_id: Id, cursor: str | None = None, *, state: str | None = None,
                  limit: int | None = None) -> Page[WorkflowJob]:
        """One page of `jobs`: pass its `next_cursor` back as `cursor` for the next."""
        return self._driver.run(list_workflow_jobs(workflow_id, state, limit, cursor))

    def wait(self, workflow_id: Id, timeout: float = 60.0) -> Workflow:
        """Poll until the workflow is finished (SUCCEEDED, FAILED or CANCELLED) → that Workflow;
        TimeoutError after `timeout` seconds."""
        return self._driver.run(wait_for(workflow_id, timeout))

    def cancel(self, workflow_id: Id) -> Workflow:
        """Cancel every unfinished job (WAITING, ENQUEUED, PROCESSING: a running handler learns it
        from its next callback) → the workflow, CANCELLED (409 for a finished one)."""
        return self._driver.run(cancel_workflow(workflow_id))

    def retry(self, workflow_id: Id) -> Workflow:
        """Run the workflow on from where it stopped: its dead-lettered jobs are enqueued again (a
        new attempt each) and those a failed dependency cancelled wait again; a succeeded job
        never runs again → the workflow, with `retried` and `waiting_again` counting them (409
        when there is nothing to retry)."""
        return self._driver.run(retry_workflow(workflow_id))


class AsyncWorkflows:
    """`client.workflows` of the asyncio client."""

    def __init__(self, driver: AsyncDriver) -> None:
        self._driver = driver

    async def create(self, jobs: Jobs, *, name: str | None = None, metadata: Mapping[str, Any] | None = None,
                     idempotency_key: str | None = None) -> Workflow:
        return await self._driver.run(create_workflow(jobs, name, metadata, idempotency_key))

    async def add_jobs(self, workflow_id: Id, jobs: Jobs) -> AddedJobs:
        return await self._driver.run(add_workflow_jobs(workflow_id, jobs))

    async def get(self, workflow_id: Id) -> Workflow:
        return await self._driver.run(get_workflow(workflow_id))

    def list(self, **filters: Unpack[WorkflowFilters]) -> AsyncIterator[Workflow]:
        return self._driver.iterate(list_workflows(filters))

    async def page(self, cursor: str | None = None, **filters: Unpack[WorkflowFilters]) -> Page[Workflow]:
        return await self._driver.run(list_workflows(filters, cursor))

    def jobs(self, workflow_id: Id, *, state: str | None = None,
             limit: int | None = None) -> AsyncIterator[WorkflowJob]:
        return self._driver.iterate(list_workflow_jobs(workflow_id, state, limit))

    async def jobs_page(self, workflow_id: Id, cursor: str | None = None, *, state: str | None = None,
                        limit: int | None = None) -> Page[WorkflowJob]:
        return await self._driver.run(list_workflow_jobs(workflow_id, state, limit, cursor))

    async def wait(self, workflow_id: Id, timeout: float = 60.0) -> Workflow:
        return await self._driver.run(wait_for(workflow_id, timeout))

    async def cancel(self, workflow_id: Id) -> Workflow:
        return await self._driver.run(cancel_workflow(workflow_id))

    async def retry(self, workflow_id: Id) -> Workflow:
        return await self._driver.run(retry_workflow(workflow_id))


share_docs(AsyncWorkflows, Workflows)
