"""the workflow transitions trigger sorts the rows that moved once, and returns no whole rows.

- jobwire_workflow_transitions: the arrays of the rows a statement moved (ids, workflows, refs,
  spawners, states before and after, cancellations by a user) are aggregated in one pass over
  the rows sorted once (each aggregate sorted them again: seven sorts of a 1,000-child release),
  and the statements that release, cancel or resume jobs return the columns their events read,
  not whole rows. Same function, same trigger, so CREATE OR REPLACE; its whole new text:
  20261203_0019/jobwire_workflow_transitions.sql. A parent's end releasing 1,000 children: 41.5
  → 38.5 ms (medians of 15 alternating EXPLAIN ANALYZE runs, each rolled back).

Downgrade restores the function of revision 20261203_0017.

Revision ID: 20261203_0019
Revises: 20261203_0018
Create Date: 2026-12-03
"""

from __future__ import annotations

from pathlib import Path

from alembic import op

from app.db.functions import apply

revision = "20261203_0019"
down_revision = "20261203_0018"
branch_labels = None
depends_on = None

COPIES = Path(__file__).with_name("20261203_0019")
BEFORE = Path(__file__).with_name("20261203_0017")  # its jobwire_workflow_transitions


def upgrade() -> None:
    apply(op.get_bind(), COPIES)


def downgrade() -> None:
    apply(op.get_bind(), BEFORE, only=frozenset({"jobwire_workflow_transitions"}))
