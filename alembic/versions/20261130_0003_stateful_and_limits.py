"""stateful jobs and handler concurrency: the guard and the indexes the claim needs.

- uq_job_executions_stateful_processing: at most one PROCESSING stateful execution per queue,
  whatever any claimer does (the claim's per-queue advisory lock keeps claimers from ever
  colliding on it; the index is the invariant itself).
- ix_job_executions_stateful_claim: the next stateful job of a queue, in claim order.
- ix_job_executions_processing_handler: PROCESSING per handler, for max_concurrency.
- ix_job_executions_handler_claim: the next jobs of a handler with max_concurrency, in claim
  order (without it each claim walks the whole due backlog to find a limited handler's jobs).

Revision ID: 20261130_0003
Revises: 20261130_0002
Create Date: 2026-11-30
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "20261130_0003"
down_revision = "20261130_0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index("uq_job_executions_stateful_processing", "job_executions", ["queue"], unique=True,
                    postgresql_where=sa.text("stateful AND state = 'PROCESSING'"))
    op.create_index("ix_job_executions_stateful_claim", "job_executions",
                    ["queue", sa.literal_column("priority DESC"), "scheduled_at"],
                    postgresql_where=sa.text("state = 'ENQUEUED' AND stateful"))
    op.create_index("ix_job_executions_processing_handler", "job_executions", ["handler"],
                    postgresql_where=sa.text("state = 'PROCESSING'"))
    op.create_index("ix_job_executions_handler_claim", "job_executions",
                    ["handler", sa.literal_column("priority DESC"), "scheduled_at"],
                    postgresql_where=sa.text("state = 'ENQUEUED'"))


def downgrade() -> None:
    op.drop_index("ix_job_executions_handler_claim", table_name="job_executions")
    op.drop_index("ix_job_executions_processing_handler", table_name="job_executions")
    op.drop_index("ix_job_executions_stateful_claim", table_name="job_executions")
    op.drop_index("uq_job_executions_stateful_processing", table_name="job_executions")
