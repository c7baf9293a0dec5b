"""a workflow's release of its children counts its own moves; the trigger it fires returns at once.

In jobwire_workflow_transitions, step 2 (the children of the jobs that became terminal): the
statement that releases the WAITING children (WAITING → ENQUEUED, or a count lower) counts its
moves in their workflows' rows itself (locked in step 1 of the same trigger run), and the trigger
it fires returns at once (the transaction-local setting jobwire.releasing, set for that statement
alone). Its moves are only those; the trigger run for them read every released row into arrays
and folded the counts, a seventh of a release's time. Rolled-back releases on PostgreSQL 15:
1,000 children 60.5 → 52.3 ms, 9,999 children 631.6 → 541.2 ms (bench/README.md, 2026-12-08).
The children's counts stay a jsonb object looked up by id: joined as arrays instead, a table
without statistics got the quadratic plan step 2's comment describes. Same function, so CREATE
OR REPLACE; its whole new text: 20261208_0028/.

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
