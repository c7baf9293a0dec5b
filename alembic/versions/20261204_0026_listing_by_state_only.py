"""the listings walk (state, created_at DESC, id) once per state: no index of every row by time.

ix_job_executions_created (created_at DESC, id) served the listings that name no state: GET
/v1/executions without `state` (and its time window), and a bulk action over several states. It
took an entry at each of a job's row versions (the insert, the claim, the outcome: none is a HOT
update, each changes the state), for those listings alone. They now walk
ix_job_executions_state_created once per state, newest first (a bulk action: oldest first), and
merge the walks: each state's first rows in that order are enough for the first of all, so a page
of 50 reads at most 50 a state. The order, the cursors and the answers are unchanged.

Downgrade builds the index again (in its transaction, holding off writes meanwhile).

Revision ID: 20261204_0026
Revises: 20261204_0025
Create Date: 2026-12-04
"""

from __future__ import annotations

from alembic import op

revision = "20261204_0026"
down_revision = "20261204_0025"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("DROP INDEX IF EXISTS ix_job_executions_created")


def downgrade() -> None:
    op.execute("CREATE INDEX IF NOT EXISTS ix_job_executions_created ON job_executions (created_at DESC, id)")
