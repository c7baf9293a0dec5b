"""event feed: job_events.xact, the id of the transaction that wrote each row.

- job_events gains `xact` (bigint): pg_current_xact_id() of the writing transaction, by default;
  the rows stored before read 0 (a constant default first, so no row is rewritten). GET /v1/events
  orders the typed rows by (xact, id) through ix_job_events_feed and serves only those of
  transactions below the oldest one still running.

A node of the previous version inserts events without naming the column: the default fills it.
Downgrade drops the column and its index.

Revision ID: 20261202_0015
Revises: 20261202_0014
Create Date: 2026-12-02
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "20261202_0015"
down_revision = "20261202_0014"
branch_labels = None
depends_on = None

XACT = "CAST(CAST(pg_current_xact_id() AS text) AS bigint)"


def upgrade() -> None:
    op.add_column("job_events", sa.Column("xact", sa.BigInteger(), nullable=False, server_default=sa.text("0")))
    op.execute(f"ALTER TABLE job_events ALTER COLUMN xact SET DEFAULT {XACT}")
    op.execute("CREATE INDEX ix_job_events_feed ON job_events (xact, id) WHERE type IS NOT NULL")


def downgrade() -> None:
    op.execute("DROP INDEX ix_job_events_feed")
    op.drop_column("job_events", "xact")
