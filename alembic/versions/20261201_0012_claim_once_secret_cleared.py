"""the claim written once; job_handlers.secret cleared; progress null until reported.

- jobwire_claim: each of its forms chooses the ids to claim (FOR UPDATE SKIP LOCKED) into an
  array, and one statement claims them (the guarded write, the events, the secrets, the result).
  Same arguments, same RETURNS TABLE, so CREATE OR REPLACE: a node of the previous version calls
  it as before. Its whole new text: 20261201_0012/jobwire_claim.sql.
- job_handlers.secret held a copy of each handler's first signing secret, never updated by a
  rotation, so a dump of it leaked a retired secret. It is set NULL and no longer written, and
  commented as deprecated. It stays, nullable, for one release: a node of the previous version
  names it when it inserts a handler (a start-up clears what such a node writes).
- job_executions.progress loses its default of zeros and its NOT NULL: an execution shows no
  progress until its handler reports some. Rows stored before keep the zeros they have (rewriting
  the history would touch every row).

Downgrade restores the claim of revision 20261201_0011 and drops the comment. The secrets stay
NULL: the code of revision 0011 never reads the column (its claim signs with job_handler_secrets)
and 0011's own downgrade fills it from job_handler_secrets before making it NOT NULL again.

Revision ID: 20261201_0012
Revises: 20261201_0011
Create Date: 2026-12-01
"""

from __future__ import annotations

from pathlib import Path

from alembic import op

from app.db.functions import apply

revision = "20261201_0012"
down_revision = "20261201_0011"
branch_labels = None
depends_on = None

COPIES = Path(__file__).with_name("20261201_0012")
DEPRECATED = "Deprecated: always NULL; the signing secrets are in job_handler_secrets."
ZEROS = """'{"total": 0, "succeeded": 0, "failed": 0, "status": null}'::jsonb"""


def upgrade() -> None:
    apply(op.get_bind(), COPIES)
    op.execute("UPDATE job_handlers SET secret = NULL WHERE secret IS NOT NULL")
    op.alter_column("job_handlers", "secret", comment=DEPRECATED, existing_nullable=True)
    op.execute("ALTER TABLE job_executions ALTER COLUMN progress DROP DEFAULT, ALTER COLUMN progress DROP NOT NULL")


def downgrade() -> None:
    op.execute(f"UPDATE job_executions SET progress = {ZEROS} WHERE progress IS NULL")
    op.execute(f"ALTER TABLE job_executions ALTER COLUMN progress SET DEFAULT {ZEROS}, "
               "ALTER COLUMN progress SET NOT NULL")
    op.alter_column("job_handlers", "secret", comment=None, existing_comment=DEPRECATED, existing_nullable=True)
    apply(op.get_bind(), COPIES / "before")
