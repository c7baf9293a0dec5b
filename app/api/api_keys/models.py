"""Request and response models of /v1/api-keys."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal
from uuid import UUID

from pydantic import Field, Strict, StringConstraints

from app.api.fields import Name, ResponseModel, StrictModel

ScopeName = Literal["read", "enqueue", "operate", "admin"]
SCOPES_DOC = ("`read`: every GET but the keys; `enqueue`: POST /v1/jobs and /v1/jobs/batch; `operate`: read, plus "
              "cancel, retry and delete of executions, the bulk actions, pause and resume; `admin`: everything "
              "(handlers and their secrets, schedules and trigger, keys)")
QUEUES_DOC = ("the queues the key is limited to: other queues' executions and schedules are 404 to it and left out "
              "of its listings, a bulk filter is narrowed to them, an enqueue, a pause or a schedule elsewhere is "
              "403; handlers and nodes are global; null: every queue")


class ApiKeyIn(StrictModel):
    name: Annotated[str, Strict(), StringConstraints(min_length=1, max_length=200)] = Field(
        description="a label for people (not unique)")
    scopes: list[ScopeName] = Field(min_length=1, max_length=4, description=SCOPES_DOC)
    queues: Annotated[list[Name], Field(min_length=1, max_length=100)] | None = Field(
        None, description=QUEUES_DOC + "; not allowed with `admin`")


class ApiKeyOut(ResponseModel):
    id: UUID
    name: str
    scopes: list[ScopeName] = Field(description=SCOPES_DOC)
    queues: list[str] | None = Field(description=QUEUES_DOC)
    created_at: datetime


class ApiKeyCreated(ApiKeyOut):
    key: str = Field(description="the key (`jw_…`), sent as `Authorization: Bearer <key>`: shown in this response "
                                 "only; Jobwire keeps its SHA-256 hash")


class ApiKeyList(ResponseModel):
    items: list[ApiKeyOut]
