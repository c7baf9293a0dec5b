"""a workflow's release of its children counts its own moves, and arrays carry the children's counts.

In jobwire_workflow_transitions, step 2 (the children of the jobs that became terminal):
- the statement that releases the WAITING children (WAITING → ENQUEUED, or a count lower)
  counts its moves in their workflows' rows itself (locked in step 1 of the same trigger), and
  the trigger it fires returns at once (the transaction-local setting jobwire.releasing, set for
  that statement alone). Its moves are only those; the trigger run for them read every released
  row into arrays and folded the counts, a seventh of a release's time;
- the children's counts of their parents that ended travel in an array beside theirs (by id),
  joined to the rows, instead of a jsonb object looked up three times per row by the id as text.
A root with 10,000 children (bench/README.md, 2026-12-08). Same function, so CREATE OR REPLACE;
its whole new text: 20261208_0028/.

A node of the previous version runs on it unchanged (the trigger is the database's).
Downgrade restores the function of revision 20261203_0021.

Revision ID: 20261208_0028
Revises: 20261207_0027
Create Date: 2026-12-08
"""

from __future__ import annotations

from pathlib import Path

from alembic import op

from app.db.functions import apply

revision = "20261208_0028"
down_revision = "20261207_0027"
branch_labels = None
depends_on = None

HERE = Path(__file__).parent
COPIES = HERE / "20261208_0028"
# Each function's text before this revision: the newest earlier copy.
BEFORE = {
    "jobwire_workflow_transitions": HERE / "20261203_0021",
}


def upgrade() -> None:
    apply(op.get_bind(), COPIES)


def downgrade() -> None:
    for name, directory in BEFORE.items():
        apply(op.get_bind(), directory, only=frozenset({name}))
