"""attempt history: typed outcome events with each attempt's own start, node, status and error.

- job_events gains `type` (execution.succeeded, execution.failed, execution.abandoned,
  execution.dead_lettered, execution.cancelled, execution.retried; NULL on the rows of inserts and
  claims, which the history does not need) and, beside the curated event, the `attempt` a row
  ends, its `started_at`, its `node`, the handler's `http_status` and its own `error` text: the
  attempt history (GET /v1/executions/{id}/attempts) reads them, no claim event needed.
- job_executions gains `claimed_by`: the node that made the current attempt's call, kept after a
  202 clears locked_by, copied into the outcome's row.
- jobwire_claim sets claimed_by (its whole new text: 20261201_0010/jobwire_claim.sql).

Rows written before this revision have no type: they are not listed as events or attempts.
Downgrade drops the columns and restores the claim of revision 20261201_0009.

Revision ID: 20261201_0010
Revises: 20261201_0009
Create Date: 2026-12-01
"""

from __future__ import annotations

from pathlib import Path

import sqlalchemy as sa
from alembic import op

from app.db.functions import apply

revision = "20261201_0010"
down_revision = "20261201_0009"
branch_labels = None
depends_on = None

COPIES = Path(__file__).with_name("20261201_0010")
TS = sa.TIMESTAMP(timezone=True)


def upgrade() -> None:
    op.add_column("job_executions", sa.Column("claimed_by", sa.Text()))
    for column in (sa.Column("type", sa.Text()), sa.Column("attempt", sa.Integer()), sa.Column("started_at", TS),
                   sa.Column("node", sa.Text()), sa.Column("http_status", sa.Integer()),
                   sa.Column("error", sa.Text())):
        op.add_column("job_events", column)
    apply(op.get_bind(), COPIES)


def downgrade() -> None:
    apply(op.get_bind(), COPIES / "before")
    for name in ("error", "http_status", "node", "started_at", "attempt", "type"):
        op.drop_column("job_events", name)
    op.drop_column("job_executions", "claimed_by")
