"""Request and response models of /v1/workflows."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal
from uuid import UUID

from pydantic import Field

from app.api.executions.models import StateName
from app.api.fields import JsonObject, Name, ResponseModel, StrictModel
from app.api.jobs.models import JobIn
from app.domain.errors import FieldError, ValidationFailed
from app.domain.workflows import MAX_JOBS_PER_CALL, DependencyPolicy, NewWorkflow, WorkflowJob, WorkflowState

WorkflowStateName = Literal[tuple(s.value for s in WorkflowState)]  # type: ignore[valid-type]


class WorkflowJobIn(JobIn):
    """A job of a workflow: every field of POST /v1/jobs (but `debounce`), its `ref` and its parents."""

    ref: Name = Field(description="the job's name in the workflow, unique there; `depends_on` names it")
    depends_on: Annotated[list[Name], Field(max_length=MAX_JOBS_PER_CALL)] = Field(
        default_factory=list, description="refs of the jobs this one waits for (WAITING until each is terminal)")
    on_dependency_failure: Literal["cancel", "run"] = Field(
        "cancel", description="cancel: a parent that ends DEAD_LETTER or CANCELLED cancels this job and its "
                              "descendants (error_type dependency_failed); run: it runs once every parent is "
                              "terminal, whatever their outcome (a batch callback)")

    def to_workflow_job(self) -> WorkflowJob:
        return WorkflowJob(ref=self.ref, job=self.to_new_job(), depends_on=tuple(self.depends_on),
                           on_dependency_failure=DependencyPolicy(self.on_dependency_failure))


Jobs = Annotated[list[WorkflowJobIn], Field(min_length=1, max_length=MAX_JOBS_PER_CALL)]


def refuse_debounce(jobs: list[WorkflowJobIn]) -> None:
    """A workflow's jobs are not debounced: 422 naming each that asks."""
    debounced = [FieldError(f"jobs[{i}].debounce", "a workflow's jobs are not debounced")
                 for i, job in enumerate(jobs) if job.debounce is not None]
    if debounced:
        raise ValidationFailed(debounced)


class WorkflowIn(StrictModel):
    name: Name | None = Field(None, description="a name to find it by (GET /v1/workflows?name=); not unique")
    metadata: JsonObject | None = None
    idempotency_key: Name | None = Field(None, description="a repeat with the same body answers 200 with the "
                                                           "workflow stored first; another body → 422")
    jobs: Jobs

    def to_new_workflow(self) -> NewWorkflow:
        return NewWorkflow(jobs=tuple(j.to_workflow_job() for j in self.jobs), name=self.name,
                           metadata=self.metadata, idempotency_key=self.idempotency_key)


class WorkflowJobsIn(StrictModel):
    jobs: Jobs


class WorkflowItemOut(ResponseModel):
    ref: str
    execution_id: UUID
    state: StateName


class WorkflowOut(ResponseModel):
    id: UUID
    name: str | None
    metadata: Any
    state: WorkflowStateName = Field(description="RUNNING while a job is not terminal; then SUCCEEDED (all "
                                                 "succeeded), FAILED (one dead-lettered or cancelled by a failed "
                                                 "dependency) or CANCELLED (a user cancelled one)")
    counts: dict[str, int] = Field(description="its jobs by state (states with none left out)")
    jobs: int = Field(description="how many jobs it has")
    created_at: datetime
    updated_at: datetime
    completed_at: datetime | None


class WorkflowMade(WorkflowOut):
    items: list[WorkflowItemOut] = Field(description="the jobs of the request, in its order")


class WorkflowJobsAdded(ResponseModel):
    workflow: WorkflowOut
    items: list[WorkflowItemOut]


class WorkflowPage(ResponseModel):
    items: list[WorkflowOut]
    next_cursor: str | None


class WorkflowJobOut(ResponseModel):
    ref: str
    execution_id: UUID
    state: StateName
    queue: str
    depends_on: list[str]


class WorkflowJobPage(ResponseModel):
    items: list[WorkflowJobOut]
    next_cursor: str | None


class WorkflowRetried(WorkflowOut):
    waiting_again: int = Field(description="jobs a failed dependency had cancelled, WAITING again")
    retried: int = Field(description="dead-lettered jobs enqueued again (a new attempt each)")
