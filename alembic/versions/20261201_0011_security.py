"""security: handler secrets that rotate, API keys with scopes.

- job_handler_secrets: a handler's signing secrets (id, secret, created_at, expires_at); every
  active one signs each dispatch. Each handler's secret moves there; job_handlers.secret becomes
  nullable and is kept for nodes of the version before this one (they sign with it), to be
  dropped by a later revision.
- job_api_keys: keys kept in the database, stored as SHA-256 hashes, with scopes and queues.
- jobwire_claim returns every active secret (handler_secrets, newest first) beside handler_secret
  (the newest: what a node of the previous version reads). CREATE OR REPLACE cannot change a
  function's RETURNS TABLE, so it is dropped and created again, in this revision's transaction
  (a claim that starts meanwhile waits for the commit).

Revision ID: 20261201_0011
Revises: 20261201_0010
Create Date: 2026-12-01
"""

from __future__ import annotations

from pathlib import Path

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import ARRAY, UUID

from app.db.functions import apply

revision = "20261201_0011"
down_revision = "20261201_0010"
branch_labels = None
depends_on = None

COPIES = Path(__file__).with_name("20261201_0011")
TS = sa.TIMESTAMP(timezone=True)
CLAIM = "jobwire_claim(text, int, float8, text[])"


def upgrade() -> None:
    op.create_table(
        "job_handler_secrets",
        sa.Column("id", UUID(as_uuid=True), primary_key=True, server_default=sa.text("jobwire_uuid7()")),
        sa.Column("handler", sa.Text(), sa.ForeignKey("job_handlers.name", ondelete="CASCADE"), nullable=False),
        sa.Column("secret", sa.Text(), nullable=False),
        sa.Column("created_at", TS, nullable=False, server_default=sa.text("now()")),
        sa.Column("expires_at", TS),
    )
    op.create_index("ix_job_handler_secrets_handler", "job_handler_secrets", ["handler", "created_at"])
    op.execute("INSERT INTO job_handler_secrets (handler, secret, created_at) "
               "SELECT name, secret, created_at FROM job_handlers WHERE secret IS NOT NULL")
    op.alter_column("job_handlers", "secret", nullable=True)
    op.create_table(
        "job_api_keys",
        sa.Column("id", UUID(as_uuid=True), primary_key=True, server_default=sa.text("jobwire_uuid7()")),
        sa.Column("name", sa.Text(), nullable=False),
        sa.Column("key_hash", sa.Text(), nullable=False, unique=True),
        sa.Column("scopes", ARRAY(sa.Text()), nullable=False),
        sa.Column("queues", ARRAY(sa.Text())),
        sa.Column("created_at", TS, nullable=False, server_default=sa.text("now()")),
        sa.CheckConstraint("cardinality(scopes) > 0 AND scopes <@ ARRAY['read', 'enqueue', 'operate', 'admin']",
                           name="scopes"),
    )
    op.execute(f"DROP FUNCTION {CLAIM}")
    apply(op.get_bind(), COPIES)


def downgrade() -> None:
    op.execute(f"DROP FUNCTION {CLAIM}")
    apply(op.get_bind(), COPIES / "before")
    op.drop_table("job_api_keys")
    # Each handler keeps its newest active secret (a node of the version before signs with one).
    op.execute("UPDATE job_handlers h SET secret = s.secret FROM (SELECT DISTINCT ON (handler) handler, secret "
               "FROM job_handler_secrets ORDER BY handler, created_at DESC, id DESC) AS s WHERE s.handler = h.name")
    op.execute("UPDATE job_handlers SET secret = 'whsec_' || encode(decode(replace(CAST(gen_random_uuid() AS text), "
               "'-', ''), 'hex'), 'base64') WHERE secret IS NULL")  # none kept: a new one (shown to no one)
    op.alter_column("job_handlers", "secret", nullable=False)
    op.drop_table("job_handler_secrets")
