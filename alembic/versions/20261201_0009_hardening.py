"""hardening: SQL functions from files, deadlock-free keyed batches, per-node EVERY_INSTANCE cursors.

From this revision on, the current text of every SQL function is one file in
app/db/sql/functions (a complete `CREATE OR REPLACE FUNCTION`), and a revision that changes a
function carries a frozen copy of its whole new text beside it (here: 20261201_0009/) and applies
it with app.db.functions.apply. Revisions 0002 and 0005-0008 built the functions by string
formatting and patched them by text replacement; these copies replace all of them.

What changes in the functions:
- `jobwire_enqueue` inserts in the order of the idempotency keys: two batches naming the same
  keys in opposite orders waited for each other's keys and deadlocked (40P01); now the second
  waits for the first and then finds its executions. Its NOTIFY channel is read from job_meta
  ('notify_channel', written here), so the file is the same for every schema. Its input and its
  checks are two small SQL functions PostgreSQL inlines (`jobwire_enqueue_input`,
  `jobwire_enqueue_faults`), each written once instead of two and three times.
- The others keep their bodies (search_path pinned the same way, `SET search_path FROM CURRENT`
  while it is that one schema).

And `job_schedule_fires.next_fire_at`: an EVERY_INSTANCE node decides whether an instant is due
by its own cursor, not by the schedule's next_fire_at, which any node moves.

Downgrade restores the functions as revision 0008 left them (20261201_0009/before/, the channel
read from job_meta) and drops the new ones and the column.

Revision ID: 20261201_0009
Revises: 20261130_0008
Create Date: 2026-12-01
"""

from __future__ import annotations

from pathlib import Path

from alembic import context, op
import sqlalchemy as sa

from app.db.functions import apply

revision = "20261201_0009"
down_revision = "20261130_0008"
branch_labels = None
depends_on = None

COPIES = Path(__file__).with_name("20261201_0009")


def upgrade() -> None:
    schema = context.config.attributes.get("schema")
    op.execute(sa.text("INSERT INTO job_meta (key, value) VALUES ('notify_channel', :channel) "
                       "ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value")
               .bindparams(channel=f"jobwire_{schema or 'default'}_enqueued"))
    apply(op.get_bind(), COPIES)
    op.add_column("job_schedule_fires", sa.Column("next_fire_at", sa.TIMESTAMP(timezone=True)))


def downgrade() -> None:
    op.drop_column("job_schedule_fires", "next_fire_at")
    apply(op.get_bind(), COPIES / "before")
    op.execute("DROP FUNCTION jobwire_enqueue_input(jsonb, uuid[])")
    op.execute("DROP FUNCTION jobwire_enqueue_faults(jsonb, jsonb, jsonb, jsonb, jsonb, jsonb, jsonb, jsonb, jsonb, "
               "jsonb, jsonb, jsonb, jsonb, jsonb)")
