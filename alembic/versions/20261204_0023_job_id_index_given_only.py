"""a job's executions by job_id: indexed only where the job_id was given.

ix_job_executions_job_id (job_id, created_at DESC) held every execution, but most are one-off jobs
whose job_id is their own id (the enqueue's default), found by the primary key. Each of their row
versions (insert, claim, outcome: every transition writes one) wrote an entry there: about a sixth
of a job's index entries, and of its WAL. ix_job_executions_job_id_given keeps the same columns for
the executions whose job_id is not their id (a caller's, a schedule's); the listing's `job_id=`
filter reads it, and the primary key for a job_id that is an execution's own id
(app/db/executions.py).

Like every revision before it, it builds the index in its transaction (CREATE INDEX CONCURRENTLY
cannot run in one), holding off writes to job_executions meanwhile. On a large table, build it
first with CREATE INDEX CONCURRENTLY under this name and definition: IF NOT EXISTS then skips it.
Downgrade builds the index of every execution again.

Revision ID: 20261204_0023
Revises: 20261203_0022
Create Date: 2026-12-04
"""

from __future__ import annotations

from alembic import op

revision = "20261204_0023"
down_revision = "20261203_0022"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("CREATE INDEX IF NOT EXISTS ix_job_executions_job_id_given ON job_executions "
               "(job_id, created_at DESC) WHERE job_id <> CAST(id AS text)")
    op.execute("DROP INDEX IF EXISTS ix_job_executions_job_id")


def downgrade() -> None:
    op.execute("CREATE INDEX IF NOT EXISTS ix_job_executions_job_id ON job_executions (job_id, created_at DESC)")
    op.execute("DROP INDEX ix_job_executions_job_id_given")
