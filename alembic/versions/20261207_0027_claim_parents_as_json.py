"""a claimed workflow job's `workflow` (its ref and its parents) is built as json, not jsonb.

The claim builds each workflow job's `workflow` ({id, ref, parents: {ref: {execution_id, state,
result}}}), which the dispatcher embeds in the handler's request as the text it gets. As jsonb,
each parent's object was built, merged into the parents' object (its keys sorted) and the whole
converted back to text; as json it is written once, as text. A job with 1,000 parents: 10.5 →
6.3 ms for that part of its claim (PostgreSQL 15, 40 alternating pairs, bench/README.md,
2026-12-07). Refs are unique in a workflow, so there is nothing for jsonb to merge. The result
column's type changes (jsonb → json), so the function is dropped and created again; its whole
new text: 20261207_0027/.

A node of the previous version keeps working: it reads the column as text.
Downgrade restores the claim of revision 20261203_0022.

Revision ID: 20261207_0027
Revises: 20261204_0026
Create Date: 2026-12-07
"""

from __future__ import annotations

from pathlib import Path

from alembic import op

from app.db.functions import apply

revision = "20261207_0027"
down_revision = "20261204_0026"
branch_labels = None
depends_on = None

HERE = Path(__file__).parent
COPIES = HERE / "20261207_0027"
# Each function's text before this revision: the newest earlier copy.
BEFORE = {
    "jobwire_claim": HERE / "20261203_0022",
}
CLAIM = "jobwire_claim(text, integer, double precision, text[])"


def upgrade() -> None:
    op.execute(f"DROP FUNCTION {CLAIM}")
    apply(op.get_bind(), COPIES)


def downgrade() -> None:
    op.execute(f"DROP FUNCTION {CLAIM}")
    for name, directory in BEFORE.items():
        apply(op.get_bind(), directory, only=frozenset({name}))
