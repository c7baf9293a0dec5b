"""handler batching: job_handlers.batch, and the claim returns it.

- job_handlers gains `batch` ({"max_size": 1–500, "max_wait_ms": 0–1000}; NULL: one call per job,
  as before). A batching handler's due jobs are sent together, up to max_size in one signed POST
  (DESIGN §9, docs/guides/handlers.md).
- jobwire_claim returns `handler_batch` (the claimed job's handler's `batch`), its only change:
  its result gains a column, so it is dropped and created again. Whole new text:
  20261203_0020/jobwire_claim.sql.

A node of the previous version keeps working: it names the columns it reads, and it calls a
batching handler once per job (a handler that batches also answers single calls: docs).
Downgrade restores the claim of revision 20261203_0017 and drops the column.

Revision ID: 20261203_0020
Revises: 20261203_0019
Create Date: 2026-12-03
"""

from __future__ import annotations

from pathlib import Path

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

from app.db.functions import apply

revision = "20261203_0020"
down_revision = "20261203_0019"
branch_labels = None
depends_on = None

COPIES = Path(__file__).with_name("20261203_0020")
BEFORE = Path(__file__).with_name("20261203_0017")  # its jobwire_claim
CLAIM = "jobwire_claim(text, integer, double precision, text[])"


def upgrade() -> None:
    op.add_column("job_handlers", sa.Column("batch", postgresql.JSONB()))
    op.execute(f"DROP FUNCTION {CLAIM}")
    apply(op.get_bind(), COPIES)


def downgrade() -> None:
    op.execute(f"DROP FUNCTION {CLAIM}")
    apply(op.get_bind(), BEFORE, only=frozenset({"jobwire_claim"}))
    op.drop_column("job_handlers", "batch")
