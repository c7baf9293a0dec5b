"""cron schedules: the metadata a fire copies, and each schedule's firing cursor.

- job_schedules.metadata: copied into every execution the schedule fires (context included).
- job_schedule_fires: per schedule and firing slot (fire_node '' for SINGLE_INSTANCE, the node
  id for EVERY_INSTANCE) the instant up to which every fire was made or given up (a misfire, an
  overlap SKIP), and the one fire a QUEUE_ONE schedule holds back while the previous still runs.
  Deleted with its schedule.

Revision ID: 20261130_0004
Revises: 20261130_0003
Create Date: 2026-11-30
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "20261130_0004"
down_revision = "20261130_0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("job_schedules", sa.Column("metadata", postgresql.JSONB(astext_type=sa.Text()), nullable=True))
    op.create_table(
        "job_schedule_fires",
        sa.Column("job_id", sa.Text(), nullable=False),
        sa.Column("fire_node", sa.Text(), nullable=False),
        sa.Column("handled_until", postgresql.TIMESTAMP(timezone=True), nullable=False),
        sa.Column("pending_fire_at", postgresql.TIMESTAMP(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(["job_id"], ["job_schedules.job_id"], ondelete="CASCADE",
                                name=op.f("fk_job_schedule_fires_job_id_job_schedules")),
        sa.PrimaryKeyConstraint("job_id", "fire_node", name=op.f("pk_job_schedule_fires")),
    )


def downgrade() -> None:
    op.drop_table("job_schedule_fires")
    op.drop_column("job_schedules", "metadata")
