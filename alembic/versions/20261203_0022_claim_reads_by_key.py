"""a claim reads its jobs' parents by key, and the handlers' secrets once, whatever plan it keeps.

jobwire_claim's statements run on plans plpgsql caches; a generic plan (made without the
parameters, and often while the tables are small) had turned two lookups into repeated scans:
- each claimed workflow job's parents are read by key (pk_job_executions, one lookup per edge).
  Joined, the generic plan hashed a sequential scan of job_executions once per claimed job: the
  bench's claims of 200 workflow jobs took 40 ms, 27 of them in those scans, and with more rows in
  the table the claim grew with the table times the jobs claimed.
- the handlers' signing secrets are a materialized CTE, read once per claim. Inlined, the generic
  plan (one claimed row expected) ran it again, sorting the claimed rows each time, for every
  claimed row: quadratic in the claim's size, for every job, in or out of a workflow.
tests/db/test_plans_by_key.py counts the scans with the generic plans forced. Same function, so
CREATE OR REPLACE; its whole new text: 20261203_0022/.

Downgrade restores the function of revision 20261203_0021.

Revision ID: 20261203_0022
Revises: 20261203_0021
Create Date: 2026-12-03
"""

from __future__ import annotations

from pathlib import Path

from alembic import op

from app.db.functions import apply

revision = "20261203_0022"
down_revision = "20261203_0021"
branch_labels = None
depends_on = None

HERE = Path(__file__).parent
COPIES = HERE / "20261203_0022"
# Each function's text before this revision: the newest earlier copy.
BEFORE = {
    "jobwire_claim": HERE / "20261203_0021",
}


def upgrade() -> None:
    apply(op.get_bind(), COPIES)


def downgrade() -> None:
    for name, directory in BEFORE.items():
        apply(op.get_bind(), directory, only=frozenset({name}))
