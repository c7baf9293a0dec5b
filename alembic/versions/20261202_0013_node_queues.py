"""node queues: each heartbeat says which queues its node claims from.

- job_server_heartbeats gains `queues` (text[]): the node's JOBWIRE_QUEUES, NULL when it claims
  from every queue, written by every heartbeat. GET /v1/executions/{id}/blockers reads it to say
  that no live node serves an execution's queue; GET /v1/nodes shows it.

A node of the previous version does not write the column: its rows say NULL (every queue) until
it is replaced, which a rolling upgrade does within one heartbeat timeout.
Downgrade drops the column.

Revision ID: 20261202_0013
Revises: 20261201_0012
Create Date: 2026-12-02
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "20261202_0013"
down_revision = "20261201_0012"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("job_server_heartbeats", sa.Column("queues", sa.ARRAY(sa.Text())))


def downgrade() -> None:
    op.drop_column("job_server_heartbeats", "queues")
